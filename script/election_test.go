package script_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/hub"
	"github.com/leasehold/leasehold/script"
)

func TestElectionKeyNames(t *testing.T) {
	tests := []struct{ give, got, want string }{
		{"leader", script.LeaderKey("sched"), "{sched}:leader"},
		{"leader braced", script.LeaderKey("{sched}:eu"), "{sched}:eu:leader"},
		{"channel", script.ElectionChannel("sched"), "leasehold_election__channel:{sched}"},
		{"channel braced", script.ElectionChannel("{sched}:eu"), "leasehold_election__channel:{sched}:eu"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.give, tt.got, tt.want)
		}
	}
}

// Every observer of a Client must hear an election message: the hub wakes
// every waiter of a channel for this message only (any other wakes one).
func TestElectionMessageWakesAll(t *testing.T) {
	if script.ElectionMessage != hub.WakeAllMessage {
		t.Fatalf("ElectionMessage %q, want the hub's wake-all message %q", script.ElectionMessage, hub.WakeAllMessage)
	}
}
