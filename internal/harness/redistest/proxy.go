package redistest

import (
	"container/heap"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	clock   *clock        // wakes the writers of delayed bytes
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
	p := &Proxy{tb: tb, target: target, ln: ln, conns: make(map[net.Conn]struct{}), clock: newClock()}
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
			p.clock.sleepUntil(c.due)
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
	p.clock.close() // after the writers: they drain their chunks on it
}

// clock wakes the proxy's writers when their chunks are due, within the
// kernel's timer slack (about 50µs). time.Sleep alone can wake a millisecond
// late: with nothing else to run, the runtime waits for timers in its
// network poller, whose timeout is in whole milliseconds, so a 250µs Delay
// would add 1ms. One goroutine sleeps the last 2ms before the earliest due
// time in select(2), which blocks its thread for as long as asked. It is one
// for the whole proxy, not one per writer: threads blocked per writer would
// slow a client with many connections (go-redis' pool) more than one with
// few, and the proxy would then measure itself.
type clock struct {
	mu      sync.Mutex
	alarms  alarms
	poke    chan struct{} // an alarm earlier than all others was set
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}
}

type alarm struct {
	due  time.Time
	ring chan struct{} // closed at due
}

// alarms is a heap of alarms, the earliest first.
type alarms []alarm

func (a alarms) Len() int           { return len(a) }
func (a alarms) Less(i, j int) bool { return a[i].due.Before(a[j].due) }
func (a alarms) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *alarms) Push(x any)        { *a = append(*a, x.(alarm)) }
func (a *alarms) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

func newClock() *clock {
	c := &clock{poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c
}

// sleepUntil returns at t, at once if t has passed.
func (c *clock) sleepUntil(t time.Time) {
	if !time.Now().Before(t) {
		return
	}
	ring := make(chan struct{})
	c.mu.Lock()
	heap.Push(&c.alarms, alarm{due: t, ring: ring})
	first := c.alarms[0].ring == ring
	c.mu.Unlock()
	if first {
		select {
		case c.poke <- struct{}{}:
		default:
		}
	}
	<-ring
}

func (c *clock) run() {
	defer close(c.done)
	const fine = 2 * time.Millisecond // slept in select(2)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		c.mu.Lock()
		now := time.Now()
		for len(c.alarms) > 0 && !c.alarms[0].due.After(now) {
			close(heap.Pop(&c.alarms).(alarm).ring)
		}
		wait := time.Duration(-1) // no alarm
		if len(c.alarms) > 0 {
			wait = c.alarms[0].due.Sub(now)
		}
		c.mu.Unlock()
		if wait >= 0 && wait <= fine {
			// Deaf to poke meanwhile: a later alarm is never earlier than
			// this one unless Delay was lowered, and then by at most 2ms.
			tv := unix.NsecToTimeval(wait.Nanoseconds())
			_, _ = unix.Select(0, nil, nil, nil, &tv) // EINTR (a runtime signal): the loop sleeps the rest
			continue
		}
		var ring <-chan time.Time
		if wait > 0 {
			timer.Reset(wait - fine)
			ring = timer.C
		}
		select {
		case <-ring:
		case <-c.poke:
			timer.Stop()
		case <-c.stop:
			timer.Stop()
			return
		}
	}
}

// close stops the clock; every alarm must have rung.
func (c *clock) close() {
	c.stopped.Do(func() { close(c.stop) })
	<-c.done
}
