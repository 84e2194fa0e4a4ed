package chaos

import (
	"slices"
	"testing"
	"time"
)

// ending is a term that ended at a known time: its leader resigned or was
// killed at at.
type ending struct {
	term uint64
	at   Mono
}

// overReported is how long after e each observer that was watching by then
// first reported the term over: a later term, or nobody leading since it.
func overReported(obs []Observed, e ending) map[string]time.Duration {
	watching := map[string]bool{}
	out := map[string]time.Duration{}
	for _, o := range obs {
		if _, done := out[o.Observer]; done {
			continue
		}
		if o.At <= e.at {
			watching[o.Observer] = true
			continue
		}
		if watching[o.Observer] && (o.Token > e.term || o.Owner == "" && o.Token == e.term) {
			out[o.Observer] = o.At.Sub(e.at)
		}
	}
	return out
}

// logResignations logs how long the observers took to report each term of
// secs over after its leader resigned (from just before its Release): the
// wake-up latency of an observer.
func logResignations(t *testing.T, obs []Observed, secs []Section) {
	t.Helper()
	var ds []time.Duration
	for _, s := range secs {
		if s.Lost != 0 || s.ReleaseErr != "" {
			continue
		}
		for _, d := range overReported(obs, ending{s.Token, s.Exit}) {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		t.Error("the observers reported no resignation")
		return
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[int(p*float64(len(ds)-1))].Round(100 * time.Microsecond) }
	t.Logf("resignation to an observer's report: n=%d median %v p90 %v max %v", len(ds), q(0.5), q(0.9), q(1))
}
