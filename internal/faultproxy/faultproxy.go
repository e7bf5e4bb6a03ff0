// Package faultproxy is a loopback TCP proxy that a test places between a
// database client and its server, to make the network fail on cue: drop
// every connection at once, drop the connection that sends a given
// statement (before the server sees it, or after it has run but before the
// client learns the outcome), refuse new connections, or stall all
// traffic.
//
// The test points the client at the proxy (testdb.DSNWithAddr rewrites a
// DSN to Addr) and the proxy relays each accepted connection to the
// target:
//
//	target, err := testdb.DSNAddr(dsn)           // or srv.Addr() of a testdb.Server
//	p, err := faultproxy.New(ctx, target)
//	defer p.Close()
//	viaProxy, err := testdb.DSNWithAddr(dsn, p.Addr()) // give this DSN to the client
//	f := p.DropOn(faultproxy.Rule{Match: []byte("SKIP LOCKED"), After: true, Times: 1})
//	... run the client ...
//	<-f.Fired() // the claim ran on the server; its client got a connection error
//
// Rules look at the bytes the client sends, whatever the protocol: with
// go-sql-driver/mysql and interpolateParams (lockstep's default) every
// statement's text travels in a COM_QUERY packet; with pgx, Exec of a
// statement without arguments sends a simple Query message, anything else
// a Parse message. pgx caches prepared statements per connection (its
// default exec mode), so such a statement's text is sent only the first
// time a connection runs it; later executions on that connection send
// only Bind and Execute, which no text rule sees. Set default_query_exec_mode=exec (or simple_protocol) in
// the pgx DSN to have the text sent every time.
//
// Beware of pgx's simple protocol through database/sql: when a connection
// ends after a statement without arguments was sent but before any
// answer, pgx (v5.12) reports it as safe to retry and database/sql runs
// the statement again on a new connection, so an After rule on such a
// statement makes it run twice while the caller sees success
// (TestPgxSimpleProtocolRunsTwice).
package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// bufSize is the most one read relays at once.
const bufSize = 32 << 10

// dialTimeout bounds connecting to the target.
const dialTimeout = 10 * time.Second

// Proxy relays connections from Addr to the target. Its methods are safe
// for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // ends at Close; bounds dials
	cancel context.CancelFunc
	wg     sync.WaitGroup

	accepted, refused, dropped, dialFailed atomic.Int64
	// maxMatch is the length of the longest pattern ever added: each
	// connection keeps that many bytes, less one, of what its client sent
	// last, so that a pattern split across two reads is found.
	maxMatch atomic.Int64

	mu      sync.Mutex
	conns   map[*conn]struct{}
	rules   []*Fault
	refuse  bool
	stalled chan struct{} // non-nil while stalled; closed when resumed
	closed  bool
}

// New listens on a free port of 127.0.0.1 and relays every connection
// accepted there to target (host:port). ctx bounds only setting up the
// listener; the proxy runs until Close.
func New(ctx context.Context, target string) (*Proxy, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: pctx, cancel: cancel, conns: map[*conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's address, 127.0.0.1:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy relays to.
func (p *Proxy) Target() string { return p.target }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines. Rules that have not fired never will.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.snapshot()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
	p.mu.Unlock()
	p.cancel()
	err := p.ln.Close()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("faultproxy: close: %w", err)
	}
	return nil
}

// DropAll closes every open connection, both sides at once, and returns
// how many it closed. The clients see their connections fail (a read or
// write returns EOF or a reset); the server sees its clients go away and
// rolls back their open transactions. New connections are relayed as
// before: add Refuse(true) to keep the server unreachable.
func (p *Proxy) DropAll() int {
	p.mu.Lock()
	conns := p.snapshot()
	p.mu.Unlock()
	n := 0
	for _, c := range conns {
		if c.drop(nil) {
			n++
		}
	}
	return n
}

// Refuse, while on, closes every new connection as soon as it is accepted
// and relays nothing: to a client the server is down (the connection
// ends before the server's greeting). Open connections are left alone.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Stall, while on, holds every byte in both directions, on open and new
// connections alike (new ones are still accepted), as a network that
// loses every packet would: clients wait until their own timeouts. When it
// is turned off the held bytes are delivered.
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.stalled == nil && !p.closed:
		p.stalled = make(chan struct{})
	case !on && p.stalled != nil:
		close(p.stalled)
		p.stalled = nil
	}
}

// Stats counts connections.
type Stats struct {
	// Accepted is how many connections were accepted and relayed (or
	// attempted to be: see DialFailed). Refused ones are not included.
	Accepted int64
	// Refused is how many were closed at once by Refuse.
	Refused int64
	// Dropped is how many the proxy cut: by DropAll or a rule. A
	// connection that its client or server closed is not included.
	Dropped int64
	// DialFailed is how many accepted connections were closed because
	// the target could not be reached.
	DialFailed int64
	// Open is how many connections are being relayed now.
	Open int
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	open := len(p.conns)
	p.mu.Unlock()
	return Stats{
		Accepted: p.accepted.Load(), Refused: p.refused.Load(), Dropped: p.dropped.Load(),
		DialFailed: p.dialFailed.Load(), Open: open,
	}
}

// Rule drops a connection whose client sends Match.
type Rule struct {
	// Match is the pattern searched for in the bytes the client sends
	// (such as a statement's text). Required.
	Match []byte
	// After chooses when the connection is dropped. False: as soon as the
	// read holding the end of Match arrives, which is not forwarded, so
	// the server never receives the statement whole (and runs nothing).
	// True: that read is forwarded, and the connection is dropped when
	// the server's reply begins (the statement has run, and committed
	// when it was autocommit), which the client never receives; the
	// client is not cut before the server answers, so a statement that
	// blocks keeps it waiting (DropAll cuts it at once). Either way no
	// later byte from the client is forwarded.
	After bool
	// Times is how many connections the rule drops before it retires;
	// 0 means every matching connection, until Fault.Remove.
	Times int
}

// Fault is a rule added by DropOn.
type Fault struct {
	p    *Proxy
	rule Rule

	left  int // firings left while Times > 0; guarded by p.mu
	fired atomic.Int64
	first chan struct{}
	done  chan struct{}
	once  sync.Once
	dOnce sync.Once
}

// DropOn adds a rule, applied to open and new connections, after the rules
// added before it (the first that matches a read decides). It panics on an
// empty pattern.
func (p *Proxy) DropOn(r Rule) *Fault {
	if len(r.Match) == 0 {
		panic("faultproxy: Rule.Match is empty")
	}
	r.Match = bytes.Clone(r.Match)
	f := &Fault{p: p, rule: r, left: r.Times, first: make(chan struct{}), done: make(chan struct{})}
	for {
		cur := p.maxMatch.Load()
		if int64(len(r.Match)) <= cur || p.maxMatch.CompareAndSwap(cur, int64(len(r.Match))) {
			break
		}
	}
	p.mu.Lock()
	p.rules = append(p.rules, f)
	p.mu.Unlock()
	return f
}

// Fired is closed once the rule has dropped its first connection: both
// sides are closed (with After, the statement reached the server and the
// server had begun to answer, or went away).
func (f *Fault) Fired() <-chan struct{} { return f.first }

// Done is closed once the rule has dropped Times connections. With Times
// 0 it is never closed.
func (f *Fault) Done() <-chan struct{} { return f.done }

// Count is how many connections the rule has dropped.
func (f *Fault) Count() int { return int(f.fired.Load()) }

// Remove retires the rule: it matches nothing from now on. A connection it
// has already matched is still dropped.
func (f *Fault) Remove() {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	f.p.removeRule(f)
}

// removeRule deletes f from the rules; p.mu is held.
func (p *Proxy) removeRule(f *Fault) {
	for i, r := range p.rules {
		if r == f {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return
		}
	}
}

// fire records that f dropped a connection.
func (f *Fault) fire() {
	n := f.fired.Add(1)
	f.once.Do(func() { close(f.first) })
	if f.rule.Times > 0 && n >= int64(f.rule.Times) {
		f.dOnce.Do(func() { close(f.done) })
	}
}

// match returns the first rule that matches chunk, given the tail of what
// the client sent before it, and takes one of its firings.
func (p *Proxy) match(tail, chunk []byte) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.rules) == 0 {
		return nil
	}
	var joined []byte
	for _, f := range p.rules {
		m := f.rule.Match
		// Only the last len(m)-1 bytes of the tail can begin a match that
		// the previous read did not contain whole.
		keep := min(len(tail), len(m)-1)
		if keep == 0 {
			if !bytes.Contains(chunk, m) {
				continue
			}
		} else {
			joined = append(append(joined[:0], tail[len(tail)-keep:]...), chunk...)
			if !bytes.Contains(joined, m) {
				continue
			}
		}
		if f.rule.Times > 0 {
			f.left--
			if f.left <= 0 {
				p.removeRule(f)
			}
		}
		return f
	}
	return nil
}

// snapshot lists the open connections; p.mu is held.
func (p *Proxy) snapshot() []*conn {
	out := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// gate returns a channel that is closed when bytes may flow.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		return p.stalled
	}
	return open
}

// open is a closed channel: the gate when nothing is stalled.
var open = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of file descriptors): the next
			// Accept may succeed.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			p.refused.Add(1)
			_ = client.Close()
			continue
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve connects to the target and relays until either side ends.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	dctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	var d net.Dialer
	server, err := d.DialContext(dctx, "tcp", p.target)
	cancel()
	if err != nil {
		p.dialFailed.Add(1)
		_ = client.Close()
		return
	}
	c := &conn{p: p, client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(c.clientToServer)
	wg.Go(c.serverToClient)
	wg.Wait()
	c.close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// conn is one relayed connection.
type conn struct {
	p              *Proxy
	client, server net.Conn

	// pending is the After rule whose statement has been forwarded: the
	// server's next bytes are not relayed, they drop the connection.
	pending atomic.Pointer[Fault]

	once sync.Once
	done chan struct{} // closed when the connection is
}

// close closes both sides once; it reports whether this call did.
func (c *conn) close() bool {
	did := false
	c.once.Do(func() {
		did = true
		close(c.done)
		_ = c.client.Close()
		_ = c.server.Close()
	})
	return did
}

// drop closes the connection on the proxy's initiative, for rule f (nil:
// DropAll), and counts it. A connection with a pending After rule counts
// as that rule's firing, whatever closed it. It reports whether the
// connection was open.
func (c *conn) drop(f *Fault) bool {
	if f == nil {
		f = c.pending.Load()
	}
	if !c.close() {
		return false
	}
	c.p.dropped.Add(1)
	if f != nil {
		f.fire()
	}
	return true
}

// wait holds a read's bytes while the proxy is stalled; false if the
// connection was closed meanwhile.
func (c *conn) wait() bool {
	select {
	case <-c.p.gate():
	case <-c.done:
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *conn) clientToServer() {
	buf := make([]byte, bufSize)
	var tail []byte
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if !c.wait() {
				return
			}
			if f := c.p.match(tail, chunk); f != nil {
				if !f.rule.After {
					c.drop(f)
					return
				}
				// Set before forwarding: the reply to this chunk must
				// find it.
				c.pending.Store(f)
				if _, err := c.server.Write(chunk); err != nil {
					c.drop(f)
				}
				return
			}
			if _, err := c.server.Write(chunk); err != nil {
				c.close()
				return
			}
			if keep := int(c.p.maxMatch.Load()) - 1; keep > 0 {
				tail = append(tail, chunk...)
				if len(tail) > keep {
					tail = append(tail[:0], tail[len(tail)-keep:]...)
				}
			}
		}
		if err != nil {
			c.close()
			return
		}
	}
}

func (c *conn) serverToClient() {
	buf := make([]byte, bufSize)
	for {
		n, err := c.server.Read(buf)
		if f := c.pending.Load(); f != nil && (n > 0 || err != nil) {
			// The server answered the statement, or went away: the
			// client learns neither.
			c.drop(f)
			return
		}
		if n > 0 {
			if !c.wait() {
				return
			}
			if _, err := c.client.Write(buf[:n]); err != nil {
				c.close()
				return
			}
		}
		if err != nil {
			c.close()
			return
		}
	}
}
