package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
)

// Many lock names at once, each contended by worker processes with short
// sections, on one Redis, with a holder killed (kill -9) on every name
// midway: the volume of acquisitions the checker sees comes from breadth,
// not from a longer run. The long form checks about 100,000 acquisitions.
func TestManyNames(t *testing.T) {
	srv := redistest.Start(t)
	names := pick(4, 24)
	perName := pick[int64](150, 4200)
	rigs := make([]*rig, names)
	for i := range rigs {
		base := defaults(KindRLock, fmt.Sprintf("many-%d", i), srv.Addr())
		base.Goroutines = 2
		base.Hold = 2 * time.Millisecond
		base.Think = time.Millisecond
		rigs[i] = newRig(t, base)
		rigs[i].spawnN("w", 2, nil)
	}
	start := time.Now()
	for i, r := range rigs {
		r.progress(0, 2*perName/3, 10*time.Minute, fmt.Sprintf("name %d before the kill", i))
		// A holder of this name dies; the others take over at its lease's end.
		f := r.fault("kill -9 holder process (many names)", 1)
		r.kill(r.procs[0])
		f.heal()
		r.spawn("late", nil)
	}
	var acquisitions int
	for i, r := range rigs {
		// Each accepted section writes twice: enter and exit.
		r.progress(0, 2*perName, 10*time.Minute, fmt.Sprintf("name %d after the kill", i))
		rep, _ := r.check(waitSlack)
		acquisitions += rep.Acquisitions
	}
	el := time.Since(start)
	t.Logf("%d names: %d acquisitions checked in %v (%.0f/s)", names, acquisitions, el.Round(time.Second), float64(acquisitions)/el.Seconds())
}
