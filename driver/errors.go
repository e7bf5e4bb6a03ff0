package driver

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
	default:
		return "other"
	}
}

// Retryable reports whether re-running the whole transaction may succeed.
func (k ErrorKind) Retryable() bool { return k != ErrorOther }

// DBError is a classified database error.
type DBError struct {
	Kind ErrorKind
	// Code is the server's code as text: "1213", "40P01", "5" (SQLITE_BUSY).
	Code string
	Err  error
}

func (e *DBError) Error() string { return fmt.Sprintf("%s (code %s): %v", e.Kind, e.Code, e.Err) }
func (e *DBError) Unwrap() error { return e.Err }

// KindOf reports the kind of a classified error anywhere in err's chain.
func KindOf(err error) ErrorKind {
	var dbe *DBError
	if errors.As(err, &dbe) {
		return dbe.Kind
	}
	return ErrorOther
}
