package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
	"github.com/leasehold/leasehold/script"
)

// groupOut is what group -json prints, decoded by the field names scripts
// rely on.
type groupOut struct {
	Name       string `json:"name"`
	Time       string `json:"time"`
	N          int    `json:"n"`
	Generation uint64 `json:"generation"`
	Members    []struct {
		Member     string      `json:"member"`
		LeaseTTLms int64       `json:"lease_ttl_ms"`
		Capacity   *int        `json:"capacity"`
		Assigned   []int       `json:"assigned"`
		Running    int         `json:"running"`
		Client     *clientJSON `json:"client"`
	} `json:"members"`
	Partitions []struct {
		Partition int         `json:"partition"`
		Lock      string      `json:"lock"`
		Owner     *string     `json:"owner"`
		State     string      `json:"state"`
		Holder    *string     `json:"holder"`
		Client    *clientJSON `json:"client"`
		Token     uint64      `json:"token"`
		Since     *string     `json:"since"`
		TTLms     *int64      `json:"ttl_ms"`
	} `json:"partitions"`
}

func groupJSONOf(t *testing.T, srv *redistest.Server, args ...string) groupOut {
	t.Helper()
	out := mustCmd(t, srv, "", append(args, "-json")...)
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("group -json printed %d lines, want one object on one line:\n%s", strings.Count(out, "\n"), out)
	}
	var g groupOut
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, out)
	}
	return g
}

// runs is what the test's members' fns saw: the Client and token under
// which each partition's fn last started.
type runs struct {
	mu     sync.Mutex
	client map[int]string
	token  map[int]uint64
}

// runMember runs a member of the group "ingest" of n partitions on c; its
// fns record themselves in r and, once their ctx ends, return when hold is
// closed (nil: at once). It is stopped when the test ends.
func runMember(t *testing.T, c *leasehold.Client, n int, r *runs, hold chan struct{}) *partition.Group {
	t.Helper()
	g := partition.New(c, "ingest", n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- g.Run(ctx, func(ctx context.Context, p int) error {
			ls := lease.FromContext(ctx)
			r.mu.Lock()
			r.client[p], r.token[p] = c.ID(), ls.Token()
			r.mu.Unlock()
			<-ctx.Done()
			if hold != nil {
				<-hold
			}
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return g
}

// group shows a partition group run by the library: its members, and each
// partition's owner, state, token and since when it is held, read from the
// token; -json the same. A partition whose last owner's fn has not returned
// shows as moving, held by that owner's Client; one whose token has run out
// shows none, held over a lease. The names are the Client's, under -prefix;
// inspect of the group's name says it is a group.
func TestGroup(t *testing.T) {
	srv := redistest.Start(t)
	const n = 6
	prefix := leasehold.WithKeyPrefix("svc:")
	ca, cb := open(t, srv, prefix), open(t, srv, prefix)
	r := &runs{client: map[int]string{}, token: map[int]uint64{}}
	hold := make(chan struct{})
	defer close(hold) // before the Clients' Close: a's fns return
	start := time.Now()
	ga, gb := runMember(t, ca, n, r, hold), runMember(t, cb, n, r, nil)
	eventually(t, 10*time.Second, "each member runs 3", func() bool { return len(ga.Owned()) == 3 && len(gb.Owned()) == 3 })

	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d+`
	ago := `\d+(\.\d+)?(m|µ)?s ago`
	want := []string{
		`^name +ingest$`,
		`^kind +partition group \(package partition\)$`,
		`^partitions +6$`,
		`^generation +\d+$`,
		`^members \(2, soonest lease end first\)$`,
		`^ +# +MEMBER +LEASE ENDS IN +CAPACITY +ASSIGNED +RUNNING +CLIENT$`,
		fmt.Sprintf(`^ +1 +%s +\d+(\.\d+)?m?s +- +3 +3 +%s$`, uuid, here()),
		fmt.Sprintf(`^ +2 +%s +\d+(\.\d+)?m?s +- +3 +3 +%s$`, uuid, here()),
		`^partitions$`,
		`^ +PARTITION +OWNER +STATE +TOKEN +SINCE$`,
	}
	r.mu.Lock()
	for p := range n {
		want = append(want, fmt.Sprintf(`^ +%d +#[12] +running +%d +%s$`, p, r.token[p], ago))
	}
	r.mu.Unlock()
	wantLines(t, mustCmd(t, srv, "", "-prefix", "svc:", "group", "ingest"), want...)

	g := groupJSONOf(t, srv, "-prefix", "svc:", "group", "ingest")
	if g.Name != "ingest" || g.N != n || g.Generation == 0 || len(g.Members) != 2 || len(g.Partitions) != n {
		t.Fatalf("-json: name %q n %d generation %d, %d members, %d partitions", g.Name, g.N, g.Generation, len(g.Members), len(g.Partitions))
	}
	for _, m := range g.Members {
		if len(m.Assigned) != 3 || m.Running != 3 || m.Capacity != nil || m.LeaseTTLms <= 0 || m.Client == nil {
			t.Errorf("-json: member %+v, want 3 assigned and running, no capacity, a lease, a client", m)
		}
	}
	r.mu.Lock()
	for p, pt := range g.Partitions {
		if pt.Partition != p || pt.Lock != fmt.Sprintf("ingest:%d", p) || pt.State != partRunning || pt.Owner == nil || pt.Holder == nil ||
			pt.TTLms == nil || *pt.TTLms <= 0 || pt.Client == nil {
			t.Errorf("-json: partition %d: %+v", p, pt)
			continue
		}
		if ownerClient(*pt.Owner) != r.client[p] || ownerClient(*pt.Holder) != r.client[p] || pt.Token != r.token[p] {
			t.Errorf("-json: partition %d: owner %s, holder %s, token %d; its fn runs on Client %s under token %d",
				p, *pt.Owner, *pt.Holder, pt.Token, r.client[p], r.token[p])
		}
		// Each partition was taken once, a first time: its token was
		// drawn from the clock as it was taken.
		since, err := time.Parse(time.RFC3339Nano, deref(pt.Since))
		if err != nil || since.Before(start.Add(-time.Second)) || since.After(time.Now().Add(time.Second)) {
			t.Errorf("-json: partition %d: since %q, want between %v and now", p, deref(pt.Since), start)
		}
	}
	r.mu.Unlock()

	// Not under the prefix: no member, nothing to show.
	wantLines(t, mustCmd(t, srv, "", "group", "ingest"), `^name +ingest$`, `^members +none: `)
	if g := groupJSONOf(t, srv, "group", "ingest"); g.N != 0 || g.Members == nil || len(g.Members) != 0 || g.Partitions == nil || len(g.Partitions) != 0 {
		t.Errorf("-json of no group: %+v, want n 0 and [] members and partitions", g)
	}
	wantLines(t, mustCmd(t, srv, "", "-prefix", "svc:", "inspect", "ingest"),
		`^state +free$`, `^"ingest" is a partition group: leasehold group ingest$`)

	// A third member: a's fns hold on once their ctx ends, so the
	// partition a gives the joiner stays a's, moving; b's moves at once.
	gc := runMember(t, open(t, srv, prefix), n, r, nil)
	eventually(t, 10*time.Second, "c assigned 2, running b's", func() bool {
		return gc.Stats().Assigned == 2 && len(gc.Owned()) == 1 && ga.Stats().Assigned == 2
	})
	g = groupJSONOf(t, srv, "-prefix", "svc:", "group", "ingest")
	moving := 0
	for _, pt := range g.Partitions {
		if pt.State != partMoving {
			continue
		}
		moving++
		if pt.Owner == nil || pt.Holder == nil || ownerClient(*pt.Holder) != ca.ID() || ownerClient(*pt.Owner) == ca.ID() {
			t.Errorf("-json: moving partition %+v, want one held by a's Client, assigned to another", pt)
		}
	}
	if moving != 1 {
		t.Errorf("-json: %d partitions moving, want 1: %+v", moving, g.Partitions)
	}
	wantLines(t, mustCmd(t, srv, "", "-prefix", "svc:", "group", "ingest"),
		fmt.Sprintf(`^ +\d +#[123] +moving: held by #[123]'s Client +\d+ +%s$`, ago))

	// A partition's token run out (as it does a lease after it was drawn):
	// none, held over a lease.
	srv.Do("DEL", script.KeysOf("svc:ingest:0").Token)
	wantLines(t, mustCmd(t, srv, "", "-prefix", "svc:", "group", "ingest"),
		`^ +0 +#[123] +(running|moving: held by #[123]'s Client) +none \(run out\) +over a lease ago$`)
	if g := groupJSONOf(t, srv, "-prefix", "svc:", "group", "ingest"); g.Partitions[0].Token != 0 || g.Partitions[0].Since != nil {
		t.Errorf("-json: partition 0 with no token: %+v, want token 0, since null", g.Partitions[0])
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
