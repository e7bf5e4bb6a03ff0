package rowtype

import (
	"errors"
	"fmt"
)

// ErrorKind classifies a database error by its code. Classification is by
// code, never by message: messages change with versions and locales.
type ErrorKind int

// The error kinds the queue distinguishes.
const (
	ErrorOther ErrorKind = iota
	// ErrorDeadlock: MySQL 1213, PostgreSQL 40P01. The whole transaction
	// was rolled back.
	ErrorDeadlock
	// ErrorSerialization: PostgreSQL 40001, MariaDB 1020 (record changed
	// since last read under innodb_snapshot_isolation).
	ErrorSerialization
	// ErrorLockTimeout: MySQL 1205 (only the statement is rolled back; the
	// transaction stays open), PostgreSQL 55P03.
	ErrorLockTimeout
	// ErrorBusy: SQLite SQLITE_BUSY / SQLITE_LOCKED.
	ErrorBusy
	// ErrorConnection: the connection failed, was refused or was lost
	// (the server is down, restarting, or killed the session). A statement
	// in flight may or may not have committed, so only work that is safe
	// to repeat after it did commit (a fenced finish, a heartbeat) may be
	// retried; see Retryable.
	ErrorConnection
	// ErrorDuplicate: a unique index refused a row (MySQL 1062,
	// PostgreSQL 23505, SQLite SQLITE_CONSTRAINT_UNIQUE). Repeating the
	// statement gives the same answer while the other row stands.
	ErrorDuplicate
	// ErrorUnavailable: the server refused the statement, without running
	// it, because it cannot take writes now — a Galera node that is not
	// ready (MySQL-family 1047: joining, donating a state transfer, or cut
	// off from the cluster's primary component), a read-only server (1290,
	// 1836), a PostgreSQL standby (25006). The transaction is rolled back
	// and may be run again whole, on another connection: a pool on several
	// hosts drops the refusing connection and connects to a ready host.
	ErrorUnavailable
)

func (k ErrorKind) String() string {
	switch k {
	case ErrorDeadlock:
		return "deadlock"
	case ErrorSerialization:
		return "serialization"
	case ErrorLockTimeout:
		return "lock wait timeout"
	case ErrorBusy:
		return "busy"
	case ErrorConnection:
		return "connection"
	case ErrorDuplicate:
		return "duplicate key"
	case ErrorUnavailable:
		return "unavailable"
	default:
		return "other"
	}
}

// Retryable reports whether re-running the whole transaction may succeed
// and is safe whatever the transaction does: the server rolled it back.
// A connection error is not: the commit may have happened.
func (k ErrorKind) Retryable() bool {
	return k != ErrorOther && k != ErrorConnection && k != ErrorDuplicate
}

// DBError is a classified database error.
type DBError struct {
	Kind ErrorKind
	// Code is the server's code as text: "1213", "40P01", "5" (SQLITE_BUSY).
	Code string
	Err  error
}

func (e *DBError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("%s: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("%s (code %s): %v", e.Kind, e.Code, e.Err)
}
func (e *DBError) Unwrap() error { return e.Err }

// Classified wraps err in a *DBError of the kind and code classify gives
// it, so that callers can tell a database away from a bad request with
// errors.As; an error classify calls ErrorOther, or one already
// classified, is returned as it is.
func Classified(err error, classify func(error) (ErrorKind, string)) error {
	if err == nil || KindOf(err) != ErrorOther {
		return err
	}
	if kind, code := classify(err); kind != ErrorOther {
		return &DBError{Kind: kind, Code: code, Err: err}
	}
	return err
}

// KindOf reports the kind of a classified error anywhere in err's chain.
func KindOf(err error) ErrorKind {
	var dbe *DBError
	if errors.As(err, &dbe) {
		return dbe.Kind
	}
	return ErrorOther
}
