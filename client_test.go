package leasehold_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/harness/testmain"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/rlock"
)

// Two goroutines of rueidis', not ours, may outlive a test by a few seconds
// and end on their own: a failed rueidis.NewClient (TestOpenUnreachable)
// leaves its reconnect delay sleeping for up to a second, and a cluster
// client that refreshed its slot map closes the connections it dropped 5s
// later.
func TestMain(m *testing.M) {
	testmain.Run(m, []*string{&redisAddr},
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestIDAndOwner(t *testing.T) {
	srv := redistest.Start(t)
	a, err := leasehold.Open(srv.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := leasehold.Open(srv.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !uuid.MatchString(a.ID()) || a.ID() == b.ID() {
		t.Fatalf("IDs %q, %q: want two distinct UUIDs", a.ID(), b.ID())
	}
	ctx := context.Background()
	l1, err := rlock.New(a, "id-owner-1").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Release(ctx)
	l2, err := rlock.New(a, "id-owner-2").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	if o1, o2 := l1.Owner(), l2.Owner(); o1 == o2 || !strings.HasPrefix(o1, a.ID()+":") {
		t.Fatalf("owners %q, %q: want distinct, under the Client's ID", o1, o2)
	}
}

// Open keeps one connection per node for its commands unless told
// otherwise: scripts and subscriptions ride on it, with no tracking, so
// that rueidis keeps it in its direct mode. One more per node, with
// tracking on, carries the guard's reads, whose invalidations wake waiters
// and tell holders of a removal.
func TestOpenUsesOneConnection(t *testing.T) {
	srv := redistest.Start(t)
	c, err := leasehold.Open(srv.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held, err := rlock.New(c, "one-conn").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := leasehold.Open(srv.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherHeld, err := rlock.New(other, "one-conn-2").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// c waits on a lock other holds: a subscription on c's connection.
	f := rlock.New(c, "one-conn-2").AcquireAsync(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Subscriptions != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no subscription")
		}
		time.Sleep(5 * time.Millisecond)
	}
	clients, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	// Two for c, two for other, and the CLIENT LIST connection itself;
	// c's command connection carries its subscription (sub=1) and no
	// tracking; each Client's tracking connection has flag t.
	if n := len(regexp.MustCompile(`(?m)^(txt:)?id=`).FindAllString(clients, -1)); n != 5 {
		t.Fatalf("%d connections, want 5 (two per Client and this one):\n%s", n, clients)
	}
	if !regexp.MustCompile(`flags=P .*sub=1 `).MatchString(clients) {
		t.Fatalf("no connection carries a subscription without tracking:\n%s", clients)
	}
	if n := len(regexp.MustCompile(`flags=t `).FindAllString(clients, -1)); n != 2 {
		t.Fatalf("%d connections with tracking, want one per Client:\n%s", n, clients)
	}
	_ = otherHeld.Release(ctx)
	l, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	_ = held.Release(ctx)
}

// New wraps a client the caller owns: Close leaves it open.
func TestNewLeavesClientOpen(t *testing.T) {
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	c, err := leasehold.New(rc, leasehold.WithWatchdog(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := rlock.New(c, "wrapped").Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(l.Err(), lease.ErrClosed) {
		t.Fatalf("lease after Close: %v", l.Err())
	}
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		t.Fatalf("the caller's client after Close: %v", err)
	}
	if n, _ := rc.Do(ctx, rc.B().Exists().Key("wrapped").Build()).AsInt64(); n != 0 {
		t.Fatal("Close left its lock held")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := rlock.New(c, "wrapped").TryAcquire(ctx); !errors.Is(err, lease.ErrClosed) {
		t.Fatalf("TryAcquire after Close = %v, want lease.ErrClosed", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	_, err = leasehold.Open(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + itoa(port)}})
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// connNames are the names of srv's client connections, from CLIENT LIST.
func connNames(t *testing.T, srv *redistest.Server) []string {
	t.Helper()
	list, err := srv.Do("CLIENT", "LIST").ToString()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m) name=(\S*) `).FindAllStringSubmatch(list, -1) {
		names = append(names, m[1])
	}
	return names
}

// Open names its connections NAME/ID (CLIENT SETNAME), so that an operator
// can tell which process holds a lock; the name survives a reconnection.
// A name the caller set in rueidis' options, or a client given to New,
// keeps its own.
func TestClientName(t *testing.T) {
	srv := redistest.Start(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	named := func(opt rueidis.ClientOption, opts ...leasehold.Option) *leasehold.Client {
		t.Helper()
		c, err := leasehold.Open(opt, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := rlock.New(c, "named").TryAcquire(ctx); err != nil && !errors.Is(err, lease.ErrNotAcquired) {
			t.Fatal(err)
		}
		return c
	}
	billing := named(srv.Option(), leasehold.WithClientName("billing-7"))
	plain := named(srv.Option())
	userOpt := srv.Option()
	userOpt.ClientName = "mine"
	named(userOpt, leasehold.WithClientName("ignored"))
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, ClientName: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	wrapped, err := leasehold.New(rc, leasehold.WithClientName("ignored-too"))
	if err != nil {
		t.Fatal(err)
	}
	defer wrapped.Close()

	names := connNames(t, srv)
	for _, want := range []string{
		"billing-7/" + billing.ID(),
		host + ":" + strconv.Itoa(os.Getpid()) + "/" + plain.ID(),
		"mine",
		"theirs",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no connection named %q in %q", want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "ignored") {
			t.Errorf("a connection named %q: WithClientName must not rename a name set already", n)
		}
	}

	// Cut billing's connection: rueidis reconnects under the same name.
	if err := srv.Do("CLIENT", "KILL", "USER", "default", "SKIPME", "yes").Error(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(connNames(t, srv), "billing-7/"+billing.ID()) {
		if time.Now().After(deadline) {
			t.Fatalf("after a reconnection, no connection named billing-7/ID in %q", connNames(t, srv))
		}
		// The first command after the cut may fail (EOF); one after it
		// reconnects.
		_, _ = rlock.New(billing, "named-again").TryAcquire(ctx)
		time.Sleep(5 * time.Millisecond)
	}

	for _, bad := range []string{"", "two words", "tab\there", "naïve", "new\nline"} {
		if _, err := leasehold.Open(srv.Option(), leasehold.WithClientName(bad)); !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("WithClientName(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

// A Client not made by Open or New (a leasehold.Client{} of one's own)
// fails the calls of its locks with ErrInvalid rather than panicking, and
// closes as a Client with nothing to close.
func TestZeroClient(t *testing.T) {
	var c leasehold.Client
	_, err := rlock.New(&c, "zero").TryAcquire(context.Background())
	if !errors.Is(err, lease.ErrInvalid) {
		t.Errorf("TryAcquire on a zero Client = %v; want ErrInvalid", err)
	}
	if s := c.Stats(); s != (leasehold.Stats{}) {
		t.Errorf("Stats of a zero Client = %+v; want zero", s)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close of a zero Client = %v", err)
	}
}
