package lease

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
)

// The level an event is logged at says whether anyone should look: a busy
// lock or an ended wait is routine (Debug), a refusal by Redis or a failed
// replication is not (Warn). ErrNotReplicated wraps ErrNotAcquired, which
// used to log a failed replication at Debug.
func TestSlogLevel(t *testing.T) {
	notReplicated := &Error{Op: "acquire", Name: "x", Err: fmt.Errorf("%w: %w", ErrNotAcquired, ErrNotReplicated)}
	for _, tt := range []struct {
		name string
		e    Event
		want slog.Level
	}{
		{"acquired", Event{Kind: Acquired}, slog.LevelDebug},
		{"busy", Event{Kind: Abandoned, Err: ErrNotAcquired}, slog.LevelDebug},
		{"wait ended", Event{Kind: Abandoned, Err: context.DeadlineExceeded}, slog.LevelDebug},
		{"not replicated", Event{Kind: Abandoned, Err: notReplicated}, slog.LevelWarn},
		{"redis refused", Event{Kind: Abandoned, Err: ErrRedis}, slog.LevelWarn},
		{"lost", Event{Kind: Lost, Err: ErrLost}, slog.LevelWarn},
		{"closed", Event{Kind: Lost, Err: ErrClosed}, slog.LevelInfo},
	} {
		if got := slogLevel(tt.e); got != tt.want {
			t.Errorf("%s: level %v, want %v", tt.name, got, tt.want)
		}
	}
}
