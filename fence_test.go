package leasehold_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/locktest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// clientConns are srv's client connections, from CLIENT LIST, each a line
// of its fields, without the one that asks.
func clientConns(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	var conns []string
	for _, line := range splitLines(list) {
		if line != "" && !strings.Contains(line, " cmd=client|list ") && !strings.Contains(line, " cmd=client ") {
			conns = append(conns, line)
		}
	}
	return conns
}

// Client.Fence writes through the Client's own connection: the write of a
// holder whose lease a newer holder replaced is refused, the current
// holder's applied, and no connection is dialled for it. The scripts'
// connection has no tracking (Open's has no client-side cache): the fenced
// write runs there, not on the tracking connection the Client reads its
// holds on, where every key the script read would enter Redis' tracking
// table.
func TestClientFence(t *testing.T) {
	srv := redistest.Start(t)
	c := locktest.Open(t, srv)
	ctx := locktest.Ctx(t, 20*time.Second)
	l := rlock.New(c, "report")
	old := locktest.MustAcquire(t, l, ctx)
	locktest.Release(t, old) // as if its lease had run out
	cur := locktest.MustAcquire(t, l, ctx)
	defer locktest.Release(t, cur)
	before := len(clientConns(t, srv))

	store := c.Fence()
	if err := store.Set(ctx, "report:body", "new", cur.Token()); err != nil {
		t.Fatal(err)
	}
	if err := c.Fence().Set(ctx, "report:body", "new, again", cur.Token()); err != nil {
		t.Fatalf("a second write under the same lease: %v", err)
	}
	err := store.Set(ctx, "report:body", "late", old.Token())
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("the replaced holder's write: %v, want fence.ErrStale", err)
	}
	if v, err := srv.Do("GET", "report:body").ToString(); err != nil || v != "new, again" {
		t.Fatalf("report:body = %q, %v; want the current holder's value", v, err)
	}

	conns := clientConns(t, srv)
	if len(conns) != before {
		t.Errorf("%d connections after the fenced writes, %d before:\n%s", len(conns), before, strings.Join(conns, "\n"))
	}
	ran := 0
	for _, conn := range conns {
		if !strings.Contains(conn, " cmd=evalsha ") {
			continue
		}
		ran++
		if flags := fieldOf(conn, "flags"); strings.Contains(flags, "t") {
			t.Errorf("the fenced write ran on a tracking connection (flags %s): %s", flags, conn)
		}
	}
	if ran == 0 {
		t.Errorf("no connection's last command is the fenced write's EVALSHA:\n%s", strings.Join(conns, "\n"))
	}
}

// fieldOf is the value of field in a CLIENT LIST line.
func fieldOf(line, field string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, field+"="); ok {
			return v
		}
	}
	return ""
}

// Once Close has begun, Fence's writes fail with lease.ErrClosed, as the
// Client's locks do, on a Client made by New too, whose connection Close
// leaves open; a Client not made by Open or New fails them with
// lease.ErrInvalid. Nothing is written.
func TestClientFenceClosed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := locktest.Ctx(t, 20*time.Second)
	rc := srv.Client()
	made, err := leasehold.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*leasehold.Client{"open": locktest.Open(t, srv), "new": made} {
		store := c.Fence()
		c.Close()
		err := store.Set(ctx, "k", "v", 1)
		want := `fence: set "k": lease: client closed: client ` + c.ID()
		if !errors.Is(err, lease.ErrClosed) || err.Error() != want {
			t.Errorf("%s: a fenced write after Close: %v, want %s", name, err, want)
		}
		if err := c.Fence().Set(ctx, "k", "v", 1); !errors.Is(err, lease.ErrClosed) {
			t.Errorf("%s: Fence after Close: %v, want lease.ErrClosed", name, err)
		}
	}
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		t.Fatalf("New's rueidis client after Close: %v, want it open", err)
	}
	if err := new(leasehold.Client).Fence().Set(ctx, "k", "v", 1); !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("the Fence of a zero Client: %v, want lease.ErrInvalid", err)
	}
	if n, err := srv.Do("EXISTS", "k", "leasehold_fence:{k}").AsInt64(); err != nil || n != 0 {
		t.Errorf("EXISTS k and its record: %d, %v; want 0", n, err)
	}
}

// On Redis Cluster, Fence writes through the Client's cluster client (on
// Redis 7, the one whose scripts publish with SPUBLISH): each write goes to
// the node of its key's slot, where its record is.
func TestClientFenceCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no Redis Cluster")
	}
	cl := redistest.StartCluster(t, 3)
	c := locktest.OpenAt(t, cl.Option())
	ctx := locktest.Ctx(t, 30*time.Second)
	store := c.Fence()
	for _, key := range []string{"balance", "{acct:1}:balance", "x{}y", "a}b"} {
		if err := store.Set(ctx, key, "v", 5); err != nil {
			t.Errorf("Set(%q): %v", key, err)
		}
		if err := store.Set(ctx, key, "w", 4); !errors.Is(err, fence.ErrStale) {
			t.Errorf("stale Set(%q): %v, want ErrStale", key, err)
		}
	}
}
