package leasetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/leasehold/leasehold/lease"
)

// logT records what the kit logs.
type logT struct {
	testing.TB
	logs []string
}

func (t *logT) Logf(format string, a ...any) { t.logs = append(t.logs, fmt.Sprintf(format, a...)) }

// A warning the kit logs is the Client's as it reads ("leasehold: ..."),
// with no second prefix; the CLIENT TRACKING one is not logged.
func TestTestLog(t *testing.T) {
	lt := &logT{TB: t}
	o := testLog{lt}
	o.Observe(lease.Event{Kind: lease.Warning, Err: errors.New("leasehold: PUBLISH is refused")})
	o.Observe(lease.Event{Kind: lease.Warning, Err: fmt.Errorf("leasehold: %w: ...", errors.New("CLIENT TRACKING unavailable"))})
	o.Observe(lease.Event{Kind: lease.Acquired, Name: "x"})
	if len(lt.logs) != 1 || lt.logs[0] != "leasehold: PUBLISH is refused" {
		t.Fatalf("logged %q; want the PUBLISH warning alone, as it reads", lt.logs)
	}
}
