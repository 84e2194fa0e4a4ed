package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/election"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
	"github.com/leasehold/leasehold/script"
)

// inspect, list and -json show an election's leader: its value and term
// (read with the lock, in one step), a new value once proclaimed; a lock
// with no leader key, or one naming an owner that no longer holds the lock,
// shows no leader. release ends the term: the leader's next renewal deletes
// the leader key.
func TestElection(t *testing.T) {
	srv := redistest.Start(t)
	c := open(t, srv, leasehold.WithWatchdog(600*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e := election.New(c, "scheduler")
	ls, err := e.Campaign(ctx, "host-1:42")
	if err != nil {
		t.Fatal(err)
	}
	acquire(t, rlock.New(c, "orders"), ctx)

	wantLines(t, mustCmd(t, srv, "", "inspect", "scheduler"),
		`^name +scheduler$`,
		`^kind +election \(leader election: an rlock and its leader key\)$`,
		`^leader +"host-1:42"$`,
		fmt.Sprintf(`^term +%d$`, ls.Token()),
		`^state +held by 1 owner$`,
		`^ttl +\d+(\.\d+)?m?s$`,
		fmt.Sprintf(`^token +%d$`, ls.Token()),
		`^holders$`,
		`^ +OWNER +HOLDS +CLIENT$`,
		fmt.Sprintf(`^ +%s +1 +%s$`, regexp.QuoteMeta(ls.Owner()), here()))
	if out := mustCmd(t, srv, "", "inspect", "orders"); strings.Contains(out, "leader") || strings.Contains(out, "term") {
		t.Errorf("inspect of an rlock shows a leader:\n%s", out)
	}
	wantLines(t, mustCmd(t, srv, "", "list", "*"),
		`^NAME +KIND +MODE +HOLDERS +HOLDS +TTL +TOKEN +WAITERS$`,
		`^orders +rlock +- +1 +1 +`,
		fmt.Sprintf(`^scheduler +election +- +1 +1 +\d+(\.\d+)?m?s +%d +0 clients$`, ls.Token()))

	j := inspectJSON(t, srv, "scheduler")
	if j.Kind != "election" || j.RedisType != "hash" || len(j.Holders) != 1 || j.Holders[0].Owner != ls.Owner() {
		t.Errorf("-json: kind %q redis_type %q holders %+v", j.Kind, j.RedisType, j.Holders)
	}
	if l := j.Leader; l == nil || l.Value != "host-1:42" || l.Term != ls.Token() || l.Owner != ls.Owner() {
		t.Errorf("-json: leader %+v, want host-1:42, term %d, owner %s", l, ls.Token(), ls.Owner())
	}
	for _, l := range parseJSON(t, mustCmd(t, srv, "", "list", "-json", "*")) {
		if want := l.Name == "scheduler"; (l.Leader != nil) != want || (l.Kind == "election") != want {
			t.Errorf("list -json %s: kind %q leader %+v", l.Name, l.Kind, l.Leader)
		}
	}

	// Proclaim changes the value, not the term.
	if err := e.Proclaim(ctx, "host-1:43"); err != nil {
		t.Fatal(err)
	}
	wantLines(t, mustCmd(t, srv, "", "inspect", "scheduler"), `^leader +"host-1:43"$`, fmt.Sprintf(`^term +%d$`, ls.Token()))

	// A leader key naming an owner that does not hold the lock names no
	// leader, as election's Leader reads it: the lock is an rlock.
	srv.Do("HSET", "stale", "b6e1c4de-0c4a-4c6b-9b63-2c1f3a7e2f10:1", "1")
	srv.Do("HSET", script.KeysOf("stale").Leader, "value", "gone:1", "token", "7", "owner", "someone-else:1")
	wantLines(t, mustCmd(t, srv, "", "inspect", "stale"), `^kind +rlock \(reentrant lock\)$`)
	if j := inspectJSON(t, srv, "stale"); j.Kind != "rlock" || j.Leader != nil {
		t.Errorf("-json of a stale leader key: kind %q leader %+v, want rlock, null", j.Kind, j.Leader)
	}

	wantLines(t, mustCmd(t, srv, "", "release", "--yes", "scheduler"), `^released scheduler \(election\); its waiters were woken$`)
	select {
	case <-ls.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the leader did not lose its term")
	}
	eventually(t, 5*time.Second, "the leader key deleted", func() bool {
		n, _ := srv.Do("EXISTS", script.KeysOf("scheduler").Leader).AsInt64()
		return n == 0
	})
	if j := inspectJSON(t, srv, "scheduler"); j.Kind != "free" || j.Leader != nil {
		t.Errorf("-json after release: kind %q leader %+v", j.Kind, j.Leader)
	}
}
