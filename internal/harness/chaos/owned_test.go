package chaos

import (
	"strings"
	"testing"
	"time"
)

// ran is partition part run by process proc from enter to end (ms).
func ran(part int, proc string, enter, end int) Run {
	return Run{Part: part, Proc: proc, ID: proc + "/p" + itoa(part), Enter: ms(enter), End: ms(end)}
}

// hit is a fault from from to healed (ms) that struck victims.
func hit(kind string, from, healed int, victims ...string) GroupFault {
	return GroupFault{Fault: Fault{Kind: kind, From: ms(from), Healed: ms(healed)}, Victims: victims}
}

// The ownership check finds each way a group can leave partitions run
// nowhere, in records made up to show it, and passes a group that takes
// its partitions over in time: a checker that cannot fail proves nothing.
func TestCheckOwned(t *testing.T) {
	const bound, gap = 1000 * time.Millisecond, 200 * time.Millisecond
	tests := []struct {
		name   string
		runs   []Run
		faults []GroupFault
		want   string // in a violation; "" for none
	}{
		{"handed over in time", []Run{
			ran(0, "a", 0, 9000), ran(1, "a", 0, 2000), ran(1, "b", 2100, 9000),
		}, nil, ""},
		{"a handover too slow", []Run{
			ran(0, "a", 0, 9000), ran(1, "a", 0, 2000), ran(1, "b", 2300, 9000),
		}, nil, "partition 1 was run nowhere for 300ms"},
		{"a kill taken over within the bound", []Run{
			ran(0, "a", 0, 9000), ran(1, "k", 0, 1000), ran(1, "a", 1900, 9000),
		}, []GroupFault{hit("kill", 1000, 1000, "k")}, ""},
		{"a kill taken over too late", []Run{
			ran(0, "a", 0, 9000), ran(1, "k", 0, 1000), ran(1, "a", 2100, 9000),
		}, []GroupFault{hit("kill", 1000, 1000, "k")}, "all run again 1.1s after the fault"},
		{"a paused member's runs end at the pause, whatever its records say", []Run{
			ran(0, "a", 0, 9000), ran(1, "s", 0, 4000), ran(1, "s", 4100, 9000),
		}, []GroupFault{hit("pause", 1000, 3500, "s")}, "all run again 3.1s after the fault"},
		{"a partition left unrun after a heal", []Run{
			ran(0, "a", 0, 1000), ran(0, "a", 3200, 9000), ran(1, "a", 0, 1000), ran(1, "b", 4600, 9000),
		}, []GroupFault{{Fault: Fault{Kind: "restart", From: ms(1000), Healed: ms(3000)}, Every: true}}, "all run again 1.6s after its heal"},
		{"after a restart, only runs that began after it count", []Run{
			ran(0, "a", 0, 9000), ran(1, "a", 0, 3200), ran(1, "a", 3300, 9000),
		}, []GroupFault{{Fault: Fault{Kind: "restart", From: ms(1000), Healed: ms(3000)}, Every: true}}, "partition 0"},
		{"a fault that struck nobody: nothing to take over", []Run{
			ran(0, "a", 0, 9000), ran(1, "a", 0, 1500), ran(1, "b", 2500, 9000),
		}, []GroupFault{hit("failover", 1000, 2000)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CheckOwned(OwnedInput{Parts: 2, Runs: tt.runs, Faults: tt.faults, Bound: bound, Gap: gap, End: ms(8000)})
			switch {
			case tt.want == "" && len(o.Violations) > 0:
				t.Errorf("%v: %q", o, o.Violations)
			case tt.want != "" && !strings.Contains(strings.Join(o.Violations, "\n"), tt.want):
				t.Errorf("%v: %q, want a violation saying %q", o, o.Violations, tt.want)
			}
		})
	}
}
