package leasetest

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/lease"
)

// What the kit sets right where miniredis differs from Redis, all of it
// here. Each piece says what of miniredis it makes up for. A Client that
// opens a tracking connection of its own where the server offers CLIENT
// TRACKING finds none on miniredis: it warns, which testLog keeps out of
// the test's log (the package doc states it), and hears of removals at
// renewal, which the short watchdog keeps within a second.

// watchdog is the kit's default watchdog lease. miniredis has no CLIENT
// TRACKING, so a Client hears that its lock was removed only when a renewal
// finds it gone: renewing every watchdog/3 = 0.5s keeps that within a
// second, as the package doc promises.
const watchdog = 1500 * time.Millisecond

// setUp fits mr to the kit before any Client dials it:
//   - keys expire on the wall clock, which TIME (the source of fencing
//     tokens and of semaphore deadlines in the scripts) already reads;
//     miniredis otherwise expires keys only when told to (FastForward). An
//     expired key is gone when a command next touches the database, so no
//     command sees it, which is all a lock can tell;
//   - every script runs after luaPrelude (scripts.hook).
func setUp(mr *miniredis.Miniredis) {
	mr.ClockTTL(true)
	srv := mr.Server()
	srv.SetPreHook((&scripts{srv: srv, sources: map[string]string{}}).hook)
}

// luaPrelude runs before every script's own source. miniredis runs scripts
// on gopher-lua, whose table.concat returns a table's lone number as a
// number where Lua 5.1 (Redis) returns a string: fair_keep's reply "1" (one
// waiter whose place is gone) would come back as an integer, which
// leasehold cannot read as the string every script replies. One line, so
// that a script's errors keep their line numbers.
const luaPrelude = "local concat__ = table.concat; table.concat = function(...) return '' .. concat__(...) end; "

// scripts runs every script with luaPrelude through miniredis' hook, which
// sees each command before miniredis does. Scripts keep the SHA1 of their
// own source: EVALSHA runs the remembered source as an EVAL of prelude and
// source, and NOSCRIPT (for a source never sent) comes from miniredis as
// from Redis.
type scripts struct {
	srv *server.Server
	mu  sync.Mutex
	// sources are the scripts sent by EVAL or SCRIPT LOAD, by SHA1.
	sources map[string]string
}

// hook returns true when it has answered cmd itself.
func (s *scripts) hook(p *server.Peer, cmd string, args ...string) bool {
	if len(args) == 0 {
		return false
	}
	switch cmd {
	case "EVAL", "EVAL_RO":
		if strings.HasPrefix(args[0], luaPrelude) {
			return false // the EVAL made below
		}
		s.remember(args[0])
		s.srv.Dispatch(p, append([]string{cmd, luaPrelude + args[0]}, args[1:]...))
		return true
	case "EVALSHA", "EVALSHA_RO":
		s.mu.Lock()
		src, ok := s.sources[strings.ToLower(args[0])]
		s.mu.Unlock()
		if !ok {
			return false
		}
		eval := strings.Replace(cmd, "EVALSHA", "EVAL", 1)
		s.srv.Dispatch(p, append([]string{eval, luaPrelude + src}, args[1:]...))
		return true
	case "SCRIPT":
		switch strings.ToUpper(args[0]) {
		case "LOAD":
			if len(args) == 2 {
				s.remember(args[1])
			}
		case "FLUSH":
			s.mu.Lock()
			clear(s.sources)
			s.mu.Unlock()
		}
	}
	return false
}

func (s *scripts) remember(src string) {
	sum := sha1.Sum([]byte(src))
	s.mu.Lock()
	s.sources[hex.EncodeToString(sum[:])] = src
	s.mu.Unlock()
}

// clientOption is how a kit Client dials addr:
//   - DisableCache: miniredis refuses CLIENT TRACKING, which rueidis'
//     client-side cache turns on at every connection (Open fails);
//   - AlwaysRESP2: on a RESP3 connection that has subscribed, miniredis
//     refuses every other command, where Redis runs them, and rueidis
//     subscribes on the connection that runs the scripts (EVALSHA is
//     refused); in RESP2 it subscribes on a connection of its own;
//   - ForceSingleClient: miniredis answers CLUSTER SLOTS as a cluster of
//     one node, which rueidis takes for a Redis Cluster; the kit stands
//     for a single Redis, the common case.
func clientOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr},
		DisableCache: true, AlwaysRESP2: true, ForceSingleClient: true}
}

// defaults are the options every kit Client starts from; the caller's
// come after and win. Warnings go to the test's log rather than to
// slog.Default, and the watchdog is the short one above.
func defaults(tb testing.TB) []leasehold.Option {
	return []leasehold.Option{leasehold.WithWatchdog(watchdog), leasehold.WithObserver(testLog{tb})}
}

// testLog is an Observer that logs a Client's warnings to tb and drops
// every other event. The Client is closed in tb's Cleanup, before tb
// completes, so nothing logs after.
type testLog struct{ tb testing.TB }

func (l testLog) Observe(e lease.Event) {
	if e.Kind == lease.Warning && !untracked(e.Err) {
		l.tb.Logf("%v", e.Err) // it reads "leasehold: ..." already
	}
}

// untracked reports whether err is the warning that the server refuses
// CLIENT TRACKING, which every kit Client would give: miniredis has none,
// and the package doc says what that changes. A test of the kit
// (TestQuiet) fails if the warning's wording moves away from this.
func untracked(err error) bool {
	return strings.Contains(err.Error(), "CLIENT TRACKING unavailable")
}
