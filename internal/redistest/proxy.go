package redistest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a loopback port to a server, and cuts
// them on demand: the faults of a network between client and Redis.
type Proxy struct {
	tb     testing.TB
	target string
	ln     net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	refuse  bool
	dropAck bool // cut the connection when the server next answers
	dropped int
	delay   time.Duration // added to every byte's trip, each way
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target; it closes
// when the test ends.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{tb: tb, target: target, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port: point the client here.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

// pipe copies src to dst. fromServer marks the server-to-client direction,
// where a pending DropNextReply cuts instead of forwarding. A second
// goroutine writes, each chunk once the delay set when it was read has
// passed, so that reading goes on meanwhile: the delay is latency, not a
// throttle, and order is kept.
func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer p.closeConn(dst)
	defer p.closeConn(src)
	type chunk struct {
		b   []byte
		due time.Time
	}
	q := make(chan chunk, 1024)
	written := make(chan struct{})
	go func() {
		defer close(written)
		failed := false
		for c := range q {
			if failed {
				continue // drain, so that the reader never blocks
			}
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				failed = true
				p.closeConn(src) // ends the reader
			}
		}
	}()
	defer func() { close(q); <-written }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			drop := fromServer && p.dropAck
			if drop {
				p.dropAck = false
				p.dropped++
			}
			delay := p.delay
			p.mu.Unlock()
			if drop {
				return // the reply is lost with the connection
			}
			q <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(delay)}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) closeConn(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Cut closes every connection through the proxy; new ones are accepted.
func (p *Proxy) Cut() {
	p.mu.Lock()
	cs := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	p.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// Refuse makes the proxy close new connections at once (true), or accept
// them again (false). With Cut, it takes Redis out of reach.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// DropNextReply makes the next bytes the server sends through the proxy be
// lost with their connection: the request was executed, its reply never
// arrives.
func (p *Proxy) DropNextReply() {
	p.mu.Lock()
	p.dropAck = true
	p.mu.Unlock()
}

// Delay adds d to the trip of every byte through the proxy, each way, from
// now on (0: none): a slow network, where Cut is a broken one.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Dropped is how many replies DropNextReply has dropped so far.
func (p *Proxy) Dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}
