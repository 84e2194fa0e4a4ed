package chaos

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// rd and wt are a section's read (enter) and write (exit) of value, issued
// at from and answered at to (ms); value -1 is a refusal. lost is an access
// whose reply never came.
func rd(from, to int, value int64) Write { return op("enter", from, to, value) }
func wt(from, to int, value int64) Write { return op("exit", from, to, value) }
func lost(from int, phase string) Write {
	return Write{Phase: phase, Issued: ms(from), Done: ms(from + 1), Err: "i/o timeout"}
}

func op(phase string, from, to int, value int64) Write {
	w := Write{Phase: phase, Issued: ms(from), Done: ms(to), Accepted: value >= 0}
	if value >= 0 {
		w.Value = value
	}
	return w
}

// taken is an entry of the resource's log.
func taken(token uint64, id, phase string, at int, value int64) Accepted {
	return Accepted{Token: token, Holder: id, Phase: phase, Issued: ms(at), Value: value}
}

// held is the section id with token and its accesses.
func held(id string, token uint64, ws ...Write) Section {
	return Section{Holder: id, ID: id, Token: token, Writes: ws}
}

// porcupine's verdict on the fenced resource's model, for histories made up
// to show each case: sections in turn, a lost update, the fence's refusals,
// a refusal the fence owed nobody, and accesses whose reply never came.
func TestCheckLinear(t *testing.T) {
	tests := []struct {
		name string
		secs []Section
		log  []Accepted
		want porcupine.CheckResult
	}{
		{"sections in turn", []Section{
			held("a", 1, rd(0, 1, 0), wt(2, 3, 1)),
			held("b", 2, rd(4, 5, 1), wt(6, 7, 2)),
		}, nil, porcupine.Ok},
		{"a lost update: both read 0 and wrote 1", []Section{
			held("a", 1, rd(0, 1, 0), wt(4, 5, 1)),
			held("b", 1, rd(2, 3, 0), wt(6, 7, 1)),
		}, nil, porcupine.Illegal},
		{"the fence refuses the earlier holder's write", []Section{
			held("a", 1, rd(0, 1, 0), wt(4, 5, -1)),
			held("b", 2, rd(2, 3, 0), wt(6, 7, 1)),
		}, nil, porcupine.Ok},
		{"a refusal where no higher token came first", []Section{
			held("a", 1, rd(0, 1, 0), wt(2, 3, -1)),
			held("b", 2, rd(4, 5, 0), wt(6, 7, 1)),
		}, nil, porcupine.Illegal},
		{"a read of a value nobody wrote", []Section{
			held("a", 1, rd(0, 1, 0), wt(2, 3, 1)),
			held("b", 2, rd(4, 5, 7)),
		}, nil, porcupine.Illegal},
		{"concurrent accesses ordered as the resource took them", []Section{
			held("a", 1, rd(0, 10, 0), wt(11, 20, 1)),
			held("b", 2, rd(5, 30, 1), wt(31, 32, 2)),
		}, nil, porcupine.Ok},
		{"a killed holder's write, in the log only", []Section{
			held("a", 1, rd(0, 1, 0)),
			held("b", 2, rd(10, 11, 1), wt(12, 13, 2)),
		}, []Accepted{taken(1, "a", "exit", 2, 1)}, porcupine.Ok},
		{"a write whose reply was lost, taken", []Section{
			held("a", 1, rd(0, 1, 0), lost(2, "exit")),
			held("b", 2, rd(10, 11, 1), wt(12, 13, 2)),
		}, []Accepted{taken(1, "a", "exit", 2, 1)}, porcupine.Ok},
		{"a write whose reply was lost, not taken", []Section{
			held("a", 1, rd(0, 1, 0), lost(2, "exit")),
			held("b", 2, rd(10, 11, 0), wt(12, 13, 1)),
		}, nil, porcupine.Ok},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The log as the resource would keep it: what the records say
			// was taken, and the made-up entries of unrecorded accesses.
			log := tt.log
			for _, s := range tt.secs {
				for _, w := range s.Writes {
					if w.Accepted {
						log = append(log, taken(s.Token, s.ID, w.Phase, int(time.Duration(w.Issued)/time.Millisecond), w.Value))
					}
				}
			}
			if got := CheckLinear(tt.secs, log, time.Minute); got.Result != tt.want {
				t.Errorf("%v, want %s", got, tt.want)
			}
		})
	}
}

// porcupine on the same workload end to end, with and without the lock: with
// an rlock, the resource's history is linearizable; without a lock and with
// one token for all (no fence), sections read the same value and write the
// same next one, an update lost, and porcupine must say Illegal; without a
// lock but with a fresh token per section, the fence alone keeps the
// history linearizable, by refusing every section that a later token
// overtook (the lock is what makes those refusals rare). A checker wired
// wrong (records lost, timestamps of no common clock) would pass the first
// and fail to catch the second.
func TestLinearCatchesNoLock(t *testing.T) {
	for _, tt := range []struct {
		kind string
		want porcupine.CheckResult
	}{
		{KindRLock, porcupine.Ok},
		{KindNoneUnfenced, porcupine.Illegal},
		{KindNone, porcupine.Ok},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			srv := startServer(t)
			base := defaults(tt.kind, "linear-"+tt.kind, srv.Addr())
			base.Hold = 10 * time.Millisecond
			r := newRig(t, base)
			r.spawnN("w", 2, nil)
			r.progress(0, 100, 30*time.Second, "accesses")
			r.stop()
			secs, _, _ := r.records()
			lin := CheckLinear(secs, r.log(), linearTimeout)
			t.Logf("%s: %v", tt.kind, lin)
			if lin.Result != tt.want {
				t.Errorf("%s: %v, want %s", tt.kind, lin, tt.want)
			}
		})
	}
}
