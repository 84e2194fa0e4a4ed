package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/internal/lua"
	"github.com/leasehold/leasehold/script"
	"github.com/leasehold/leasehold/semaphore"
)

// inspect, list and watch show a semaphore: its total and available
// permits, each permit held with its expiry (leasehold's and Redisson's,
// one without a lease too), the waiters for several permits; release
// leaves it alone. -json carries the same.
func TestSemaphore(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := semaphore.New(c, "crawl")
	if _, err := s.TrySetPermits(ctx, 5); err != nil {
		t.Fatal(err)
	}
	one := acquire(t, s, ctx)
	two := acquire(t, s.Weighted(2), ctx)
	// A permit Redisson took with no lease, and one whose lease ran out.
	srv.Do("DECRBY", "crawl", "2")
	srv.Do("ZADD", script.KeysOf("crawl").SemaphoreTimeout, fmt.Sprint(lua.NonExpiring), "java-forever-id!")
	srv.Do("ZADD", script.KeysOf("crawl").SemaphoreTimeout, "1", "java-expired-id!")
	f := semaphore.New(open(t, srv), "crawl").Weighted(3).AcquireAsync(ctx)
	eventually(t, 5*time.Second, "a waiter for 3 claims", func() bool {
		n, _ := srv.Do("ZCARD", script.KeysOf("crawl").SemaphoreClaims).AsInt64()
		return n == 1
	})
	// Its attempt gave the expired permit back: 1 free of 5, 4 held.
	id := func(owner string, i int) string {
		return regexp.QuoteMeta(hex.EncodeToString([]byte(lua.PermitID(owner, i))))
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "crawl"),
		`^name +crawl$`,
		`^kind +semaphore \(permits, Redisson's RPermitExpirableSemaphore\)$`,
		`^total +5$`,
		`^available +1$`,
		`^state +4 permits held by 3 holders$`,
		`^permits \(soonest expiry first\)$`,
		`^ +PERMIT +EXPIRES IN +CLIENT$`,
		`^ +[0-9a-f]{32} +(29|30)(\.\d+)?s +`+here()+`$`,
		`^ +[0-9a-f]{32} +(29|30)(\.\d+)?s +`+here()+`$`,
		`^ +[0-9a-f]{32} +(29|30)(\.\d+)?s +`+here()+`$`,
		`^ +`+hex.EncodeToString([]byte("java-forever-id!"))+` +never \(taken without a lease\) +-$`,
		`^waiting for several permits \(1\), holding smaller takers back$`,
		`^ +OWNER:PERMITS +CLAIMED FOR +CLIENT$`,
		`^ +[-0-9a-f]+:\d+:3 +\d+(\.\d+)?s +`+here()+`$`)
	out := mustCmd(t, srv, "", "inspect", "crawl")
	for _, p := range []string{id(one.Owner(), 0), id(two.Owner(), 0), id(two.Owner(), 1)} {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("no permit %s in:\n%s", p, out)
		}
	}

	wantLines(t, mustCmd(t, srv, "", "list", "*"),
		`^NAME +KIND +MODE +HOLDERS +HOLDS +TTL +TOKEN +WAITERS$`,
		`^crawl +semaphore +1/5 free +3 +4 +(29|30)(\.\d+)?s +0 +1$`)

	// -json agrees with the table: 3 holders (leases) of 4 permits, and the
	// soonest expiry as ttl_ms. It said holders [] and ttl_ms null.
	j := inspectJSON(t, srv, "crawl")
	if j.Kind != "semaphore" || j.RedisType != "string" || j.TTLms == nil || *j.TTLms < 28000 || *j.TTLms > 30000 || j.Semaphore == nil {
		t.Fatalf("-json: %+v", j)
	}
	leases := map[string]int64{}
	var permits int64
	for _, h := range j.Holders {
		leases[h.Owner] = h.Count
		permits += h.Count
		java := strings.HasPrefix(h.Owner, hex.EncodeToString([]byte("java")))
		if (h.Client == nil) != java || (h.Client != nil && h.Client.Name != name(t)) {
			t.Errorf("-json: holder %s: client %+v", h.Owner, h.Client)
		}
	}
	if len(j.Holders) != 3 || permits != 4 || leases[id(two.Owner(), 0)[:28]] != 2 {
		t.Errorf("-json: holders %+v, want 3 holding 4 permits, 2 of them %s's", j.Holders, id(two.Owner(), 0)[:28])
	}
	sj := j.Semaphore
	if *sj.Total != 5 || *sj.Available != 1 || sj.Holders != 3 || len(sj.Permits) != 4 || len(sj.Claims) != 1 {
		t.Errorf("-json semaphore: total %d available %d holders %d permits %d claims %d", *sj.Total, *sj.Available, sj.Holders, len(sj.Permits), len(sj.Claims))
	}
	if last := sj.Permits[3]; last.TTLms != -1 || last.ID != hex.EncodeToString([]byte("java-forever-id!")) {
		t.Errorf("-json: the permit without a lease: %+v", last)
	}
	if j := inspectJSON(t, srv, "orders"); j.Semaphore != nil {
		t.Errorf("-json of a lock: semaphore %+v, want null", j.Semaphore)
	}

	if _, err := cmd(t, srv, "", "release", "--yes", "crawl"); err == nil || !strings.Contains(err.Error(), "semaphore") {
		t.Fatalf("release of a semaphore: %v, want a refusal", err)
	}
	if n, _ := srv.Do("ZCARD", script.KeysOf("crawl").SemaphoreTimeout).AsInt64(); n != 4 {
		t.Fatalf("%d permits held after the refused release, want 4", n)
	}

	one.Release(ctx)
	two.Release(ctx)
	srv.Do("ZREM", script.KeysOf("crawl").SemaphoreTimeout, "java-forever-id!")
	srv.Do("INCR", "crawl")
	l, err := f.Result()
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	// No permit held and nobody waiting: the count is all there is of it,
	// as of a counter, and inspect says it is either (it said semaphore,
	// and so of any integer). Its last waiter's Client unsubscribes from
	// its channel as it goes.
	eventually(t, 5*time.Second, "crawl shown as a counter or an unused semaphore", func() bool {
		return strings.Contains(mustCmd(t, srv, "", "inspect", "crawl"), "either a counter or an unused semaphore")
	})
	wantLines(t, mustCmd(t, srv, "", "inspect", "crawl"), `^kind +either a counter or an unused semaphore `, `^value +5$`)
	wantLines(t, mustCmd(t, srv, "", "list", "*"), `^no locks match "\*"$`)
	// Never set: a name with nothing is free, as for a lock.
	wantLines(t, mustCmd(t, srv, "", "inspect", "unset"), `^kind +free \(no lock key\)$`)
}
