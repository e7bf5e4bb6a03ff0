package driver

import (
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// BrokenConnection reports whether err says the connection itself failed,
// by type and errno, as every driver's errors have it: database/sql's
// ErrBadConn, an unexpected end of stream, a network error (refused,
// reset, closed, timed out). Drivers add their own codes (a server
// shutting down, a killed session) on top.
func BrokenConnection(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	switch {
	case errors.Is(err, sqldriver.ErrBadConn),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &ne):
		return true
	}
	return false
}
