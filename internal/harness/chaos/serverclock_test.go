package chaos

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// clockShim is an LD_PRELOAD library that shifts a process's wall clock
// (clock_gettime of CLOCK_REALTIME and CLOCK_REALTIME_COARSE, gettimeofday,
// time) by the nanoseconds in the file $LEASEHOLD_CLOCK_SHIFT (8 bytes,
// little-endian), read on every call through a shared mapping, so that the
// test steps a running server's clock by writing the file. The monotonic
// clock is left alone, as a step of the system clock leaves it. It calls the
// kernel directly, never the libc it replaces (dlsym): libfaketime, which
// does, hangs redis-server 7.0 at its start.
const clockShim = `
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int64_t none;
static volatile int64_t *shift;

static int64_t offset(void) {
	volatile int64_t *p = __atomic_load_n(&shift, __ATOMIC_ACQUIRE);
	if (!p) {
		p = &none;
		const char *path = getenv("LEASEHOLD_CLOCK_SHIFT");
		int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (fd >= 0) {
			void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
			if (m != MAP_FAILED) p = m;
			close(fd);
		}
		__atomic_store_n(&shift, p, __ATOMIC_RELEASE);
	}
	int64_t a, b;
	do { a = *p; b = *p; } while (a != b); /* a torn read of a write in progress */
	return a;
}

static int realtime(clockid_t clk, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, clk, ts);
	if (r != 0) return -1;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + offset();
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
	if (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE) return realtime(clk, ts);
	return syscall(SYS_clock_gettime, clk, ts) == 0 ? 0 : -1;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	if (realtime(CLOCK_REALTIME, &ts) != 0) return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (realtime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
	if (t) *t = ts.tv_sec;
	return ts.tv_sec;
}
`

// serverClock is the wall clock of the servers started with its Env: the
// shim, and the file that holds its shift.
type serverClock struct {
	t     *testing.T
	lib   string
	file  string
	shift time.Duration
}

// newServerClock builds the shim with gcc (the test skips without it, unless
// LEASEHOLD_CHAOS_NETNS=1, as CI sets) and writes a shift of 0.
func newServerClock(t *testing.T) *serverClock {
	t.Helper()
	if !found("gcc") {
		if os.Getenv(netnsEnv) == "1" {
			t.Fatal("no gcc to build the clock shim (apt-get install gcc)")
		}
		t.Skip("no gcc to build the clock shim (apt-get install gcc)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "clockshim.c")
	c := &serverClock{t: t, lib: filepath.Join(dir, "clockshim.so"), file: filepath.Join(dir, "shift")}
	if err := os.WriteFile(src, []byte(clockShim), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", c.lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(c.file, make([]byte, 8), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// Env is what a server's environment needs to run on this clock.
func (c *serverClock) Env() []string {
	return []string{"LD_PRELOAD=" + c.lib, "LEASEHOLD_CLOCK_SHIFT=" + c.file}
}

// Step moves the servers' wall clock by d, at once.
func (c *serverClock) Step(d time.Duration) {
	c.t.Helper()
	c.shift += d
	f, err := os.OpenFile(c.file, os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	// In place, never truncated: the servers have it mapped.
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint64(nil, uint64(c.shift)), 0); err != nil {
		c.t.Fatal(err)
	}
}

// serverTime is the server's TIME.
func serverTime(t *testing.T, srv *redistest.Server) time.Time {
	t.Helper()
	v, err := srv.Do("TIME").AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME: %v %v", v, err)
	}
	s, _ := strconv.ParseInt(v[0], 10, 64)
	us, _ := strconv.ParseInt(v[1], 10, 64)
	return time.Unix(s, us*1000)
}

// The server's wall clock stepped forward by a minute and back by a
// minute, for real (the clock shim), while worker processes contend for an
// rlock on it. Forward: every lock key's expiry is now past, so the key of
// a holder caught in its section expires at once, and a waiter may take the
// lock before the holder has heard (the documented limit: a stepped server
// clock expires locks early, so the checker counts such overlaps apart);
// the holder hears within a round trip of the expiry. Back: keys live a
// minute longer, nothing is lost. Through both, tokens rise strictly: after
// the forward step from the clock (the counter expired with the lock), after
// the step back from the counter, which the contention keeps alive.
func TestServerClockStep(t *testing.T) {
	clk := newServerClock(t)
	srv := redistest.StartWith(t, redistest.Config{Env: clk.Env()})
	before := serverTime(t, srv)
	clk.Step(time.Minute)
	if d := serverTime(t, srv).Sub(before); d < time.Minute || d > time.Minute+10*time.Second {
		t.Fatalf("the server's clock moved by %v after a step of a minute: the shim is not in use", d)
	}
	clk.Step(-time.Minute)
	base := defaults(KindRLock, "server-clock", srv.Addr())
	r := newRig(t, base)
	r.ready(r.spawnN("w", 2, nil)...)
	type step struct {
		holder    string
		token     uint64
		at        Mono
		next      Accepted
		lastToken uint64 // before the step back
		backAt    Mono
	}
	var steps []step
	for i := range pick(1, 3) {
		// A victim in its section for 3 leases when the clock jumps.
		v := r.spawn("stepped"+itoa(i), func(c *WorkerConfig) { c.Goroutines, c.Hold = 1, 3*base.Watchdog })
		enter := r.await(30*time.Second, "enter by "+v.id, enterOf(v.id), r.writes(), 1)
		from := r.writes()
		f := r.fault("server clock stepped +60s", 1)
		clk.Step(time.Minute)
		at := Now()
		f.heal()
		next := r.await(30*time.Second, "an entry after the step forward", func(a Accepted) bool {
			return a.Phase == "enter" && a.Holder != enter.Holder
		}, from, 1)
		eventually(t, 10*time.Second, v.id+"'s section to end", func() bool { return r.ended(enter.Holder, enter.Token) })
		r.finish(v)

		r.progress(r.writes(), 10, 30*time.Second, "before the step back")
		log := r.log()
		last := log[len(log)-1].Token
		f = r.fault("server clock stepped -60s", 1)
		clk.Step(-time.Minute)
		backAt := Now()
		f.heal()
		r.progress(r.writes(), 10, 30*time.Second, "after the step back")
		steps = append(steps, step{enter.Holder, enter.Token, at, next, last, backAt})
	}
	rep, secs := r.checkWith(waitSlack, true)
	log := r.log()
	for i, st := range steps {
		s := section(t, secs, st.holder, st.token)
		n := section(t, secs, st.next.Holder, st.next.Token)
		if n.Token <= st.token {
			t.Errorf("step %d: token %d after the step forward, not above %d before it", i, n.Token, st.token)
		}
		for _, e := range log {
			if e.Phase == "enter" && e.Issued > st.backAt {
				if e.Token <= st.lastToken {
					t.Errorf("step %d: token %d after the step back, not above %d before it", i, e.Token, st.lastToken)
				}
				break
			}
		}
		if s.Lost == 0 {
			t.Errorf("step %d: %s token %d not lost though its key expired with the step", i, st.holder, st.token)
			continue
		}
		order := fmt.Sprintf("heard %v before %s (token %d) entered", n.Enter.Sub(s.Lost).Round(10*time.Microsecond), n.Holder, n.Token)
		if n.Enter < s.Lost {
			order = fmt.Sprintf("%s (token %d) entered %v before it heard", n.Holder, n.Token, s.Lost.Sub(n.Enter).Round(10*time.Microsecond))
		}
		t.Logf("step %d: %s token %d heard the loss %v after the step (%s); %s",
			i, st.holder, st.token, s.Lost.Sub(st.at).Round(100*time.Microsecond), lossCause(s.LostErr), order)
		totals.clockStep(s.Lost.Sub(st.at))
	}
	t.Logf("%d overlapping sections, %d guarded by the fence", rep.Overlaps, rep.Guarded)
}

// lossCause is the part of a loss's error that says how it was heard.
func lossCause(err string) string {
	if _, after, ok := strings.Cut(err, "lost: "); ok {
		return after
	}
	return err
}
