package lua

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// Each election script, step by step on the state the steps before left:
// its reply, the lock hash and the leader key after it, and the messages it
// published (an election message for every change of the leader key, an
// unlock message when the lock is freed, nothing else).
func TestElectionScripts(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name = "e"
	e := NewElection(name, Config{Lease: time.Minute, Latch: time.Minute})
	k := script.KeysOf(name)
	heard := listen(t, srv, "*")
	const marker = "marker"
	elected, unlocked := k.ElectionChannel+" 1", k.Channel+" 0"
	var term string // the token of a's first campaign

	campaign := func(owner, value string) func() (string, error) {
		return func() (string, error) {
			g, err := e.Campaign(value).Try(ctx, c, owner, true)
			if g.Acquired && g.Count == 1 {
				term = strconv.FormatUint(g.Token, 10)
			}
			return strconv.FormatBool(g.Acquired) + "/" + strconv.FormatInt(g.Count, 10), err
		}
	}
	renew := func(owner string) func() (string, error) {
		return func() (string, error) {
			n, err := run(ctx, c, e.Campaign("").Renewal(owner)).AsInt64()
			return strconv.FormatInt(n, 10), err
		}
	}
	proclaim := func(owner, value string) func() (string, error) {
		return func() (string, error) {
			ok, err := e.Proclaim(ctx, c, owner, value)
			return strconv.FormatBool(ok), err
		}
	}
	release := func(owner, id string, all bool) func() (string, error) {
		return func() (string, error) {
			n, err := e.Campaign("").Release(ctx, c, owner, id, all, 0)
			return strconv.FormatInt(n, 10), err
		}
	}
	do := func(args ...string) func() (string, error) {
		return func() (string, error) { return "", srv.Do(args...).Error() }
	}

	steps := []struct {
		name   string
		act    func() (string, error)
		want   string
		lock   string // the lock hash, "field=value" sorted
		leader string // the leader key, "value,owner" ("" when gone); its token is checked against term
		heard  []string
	}{
		{"a campaigns for a free lock", campaign("a", "v1"), "true/1", "a=1", "v1,a", []string{elected}},
		{"b campaigns while a leads", campaign("b", "w"), "false/0", "a=1", "v1,a", nil},
		{"a renews", renew("a"), "1", "a=1", "v1,a", nil},
		{"b renews nothing", renew("b"), "0", "a=1", "v1,a", []string{elected}},
		{"b cannot proclaim", proclaim("b", "w"), "false", "a=1", "v1,a", nil},
		{"a proclaims", proclaim("a", "v2"), "true", "a=1", "v2,a", []string{elected}},
		{"a re-enters", campaign("a", "v3"), "true/2", "a=2", "v3,a", []string{elected}},
		{"a releases one hold", release("a", "r1", false), "0", "a=1", "v3,a", nil},
		{"the release is retried", release("a", "r1", false), "0", "a=1", "v3,a", nil},
		{"a resigns", release("a", "r2", true), "1", "", "", []string{elected, unlocked}},
		{"a renews no more", renew("a"), "0", "", "", []string{elected}},
		{"a releases no more", release("a", "r3", true), "-1", "", "", nil},
		{"a campaigns again", campaign("a", "v4"), "true/1", "a=1", "v4,a", []string{elected}},
		{"an operator deletes the leader key", do("DEL", k.Leader), "", "a=1", "", nil},
		{"a's renewal ends its term and frees the lock", renew("a"), "0", "", "", []string{unlocked, elected}},
		{"a campaigns again", campaign("a", "v5"), "true/1", "a=1", "v5,a", []string{elected}},
		{"an operator deletes the leader key", do("DEL", k.Leader), "", "a=1", "", nil},
		{"a's re-entry finds its term ended", campaign("a", "v6"), "false/0", "", "", []string{unlocked}},
		{"b campaigns", campaign("b", "w1"), "true/1", "b=1", "w1,b", []string{elected}},
		{"an operator deletes the lock", do("DEL", name), "", "", "w1,b", nil},
		{"a takes the lock over b's leader key", campaign("a", "v7"), "true/1", "a=1", "v7,a", []string{elected}},
		{"b's renewal leaves a's key", renew("b"), "0", "a=1", "v7,a", []string{elected}},
		{"b's release leaves a's key", release("b", "r4", true), "-1", "a=1", "v7,a", nil},
		{"the lock is deleted under a", do("DEL", name), "", "", "v7,a", nil},
		{"a's release deletes its leader key left behind", release("a", "r5", true), "-1", "", "", []string{elected}},
	}
	for _, st := range steps {
		got, err := st.act()
		if err != nil || got != st.want {
			t.Fatalf("%s: got %q, %v; want %q", st.name, got, err, st.want)
		}
		fields, err := srv.Do("HGETALL", name).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		var lock []string
		for k, v := range fields {
			lock = append(lock, k+"="+v)
		}
		slices.Sort(lock)
		if strings.Join(lock, ",") != st.lock {
			t.Fatalf("%s: lock %v, want %s", st.name, lock, st.lock)
		}
		l, err := srv.Do("HGETALL", k.Leader).AsStrMap()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case st.leader == "" && len(l) != 0:
			t.Fatalf("%s: leader key %v, want none", st.name, l)
		case st.leader != "" && (l["value"]+","+l["owner"] != st.leader || len(l) != 3):
			t.Fatalf("%s: leader key %v, want %s", st.name, l, st.leader)
		case st.leader != "" && l["token"] != term:
			t.Fatalf("%s: leader key's token %s, want the term %s", st.name, l["token"], term)
		}
		if st.leader != "" {
			// It takes the lock's lease, and is renewed and released with it.
			lt, _ := srv.Do("PTTL", name).AsInt64()
			kt, _ := srv.Do("PTTL", k.Leader).AsInt64()
			if st.lock != "" && (kt <= 0 || lt <= 0 || kt > lt+1 || lt > kt+1000) {
				t.Fatalf("%s: leader key PTTL %d, lock PTTL %d", st.name, kt, lt)
			}
		}
		srv.Do("PUBLISH", marker, "m")
		for _, w := range append(st.heard, marker+" m") {
			if got := next(t, heard); got != w {
				t.Fatalf("%s: heard %q, want %q", st.name, got, w)
			}
		}
	}
}

// election_leader reads the leader only while its owner holds the lock.
func TestElectionLeader(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e := NewElection("l", Config{Lease: time.Minute})
	if _, ok, err := e.Leader(ctx, c); ok || err != nil {
		t.Fatalf("no leader: %v, %v", ok, err)
	}
	g, err := e.Campaign("addr").Try(ctx, c, "a", true)
	if err != nil || !g.Acquired {
		t.Fatal(g, err)
	}
	got, ok, err := e.Leader(ctx, c)
	if err != nil || !ok || got.Value != "addr" || got.Owner != "a" || got.Token != g.Token || got.TTL <= 0 || got.TTL > time.Minute {
		t.Fatalf("Leader = %+v, %v, %v", got, ok, err)
	}
	for _, st := range [][]string{
		{"DEL", "l"},                // the lock is gone: its key left is nobody's
		{"SET", e.LeaderKey(), "x"}, // a key of another type is none
		{"HSET", "l", "a", "1"},     // the owner holds again, under a foreign key
	} {
		srv.Do(st...)
		if got, ok, err := e.Leader(ctx, c); ok || err != nil {
			t.Fatalf("after %v: Leader = %+v, %v, %v", st, got, ok, err)
		}
	}
}

// Redis keeps the writes of a script that errors halfway: each election
// script that can fail fails before its first write.
func TestElectionScriptsFailBeforeWriting(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const name, owner = "n", "client:1"
	e := NewElection(name, Config{Lease: time.Minute})
	k := script.KeysOf(name)
	leader := k.Leader
	errOf := func(_ any, err error) error { return err }
	renew := func() error {
		return run(ctx, c, e.Campaign("v").Renewal(owner)).Error()
	}
	tests := []struct {
		name  string
		setup [][]string
		run   func() error
		want  string
	}{
		{"campaign: a leader key of another type", [][]string{{"SET", leader, "x"}},
			func() error { return errOf(e.Campaign("v").Try(ctx, c, owner, true)) }, "WRONGTYPE"},
		{"campaign: a corrupt fencing counter", [][]string{{"SET", k.Token, "x"}},
			func() error { return errOf(e.Campaign("v").Try(ctx, c, owner, true)) }, "not an integer"},
		{"campaign: re-entry on a count not an integer", [][]string{{"HSET", name, owner, "x"}, {"HSET", leader, "owner", owner}},
			func() error { return errOf(e.Campaign("v").Try(ctx, c, owner, true)) }, "not an integer"},
		{"campaign: a lock of another type", [][]string{{"SET", name, "x"}, {"HSET", leader, "owner", owner}},
			func() error { return errOf(e.Campaign("v").Try(ctx, c, owner, true)) }, "WRONGTYPE"},
		{"release: a lock of another type", [][]string{{"SET", name, "x"}, {"HSET", leader, "owner", owner}},
			func() error { return errOf(e.Campaign("v").Release(ctx, c, owner, "r", true, 0)) }, "WRONGTYPE"},
		{"release one: a lock of another type", [][]string{{"SET", name, "x"}, {"HSET", leader, "owner", owner}},
			func() error { return errOf(e.Campaign("v").Release(ctx, c, owner, "r", false, 0)) }, "WRONGTYPE"},
		{"renew: a lock of another type", [][]string{{"SET", name, "x"}, {"HSET", leader, "owner", owner}},
			renew, "WRONGTYPE"},
		{"proclaim: a lock of another type", [][]string{{"SET", name, "x"}, {"HSET", leader, "owner", owner}},
			func() error { return errOf(e.Proclaim(ctx, c, owner, "v")) }, "WRONGTYPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.Do("FLUSHALL")
			for _, cmd := range tt.setup {
				if err := srv.Do(cmd...).Error(); err != nil {
					t.Fatalf("%v: %v", cmd, err)
				}
			}
			before := snapshot(t, srv)
			err := tt.run()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
			if after := snapshot(t, srv); after != before {
				t.Fatalf("the script wrote before failing:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
