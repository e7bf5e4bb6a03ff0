package testdb

import (
	"fmt"
	"net"
	"syscall"
)

// portHold keeps a stopped server's port from being handed out: a socket
// bound to it (not listening, so connecting is refused as with no server)
// makes the kernel skip the port when it picks a free one, for another
// test's server (freePort) or as the source port of an outgoing
// connection (which could otherwise connect to itself).
type portHold struct{ fd int }

// holdPort binds 127.0.0.1:port. SO_REUSEADDR lets it share the port with
// the TIME_WAIT remains of the server's connections, and lets the server
// bind it again once the hold is released.
func holdPort(port int) (*portHold, error) {
	syscall.ForkLock.RLock() // no fork may inherit the descriptor before it is close-on-exec
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("bind 127.0.0.1:%d: %w", port, err)
	}
	return &portHold{fd: fd}, nil
}

func (h *portHold) release() {
	if h != nil {
		_ = syscall.Close(h.fd)
	}
}

// freePort asks the kernel for an unused port. Another process may grab it
// before the server binds it; callers retry on "Address already in use".
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
