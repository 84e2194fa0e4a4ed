package core

import (
	"time"
)

// Late returns an error for each watchdog hold whose renewal is late: none
// confirmed for two renewal rounds (two thirds of its lease), so one more
// missed round loses it. A round missed once is not late: a reply can be
// lost, and the keeper retries it sooner than the next tick.
func (k *Keeper) Late() []error {
	var late []error
	now := time.Now()
	for _, h := range k.renewable() {
		d := h.Deadline()
		if d.IsZero() {
			continue
		}
		// The deadline is the last confirmed renewal's send time plus the
		// lease, less the drift (see confirm).
		last := d.Add(-(h.cfg.TTL - drift(h.cfg.TTL)))
		if since := now.Sub(last); since > 2*k.interval {
			late = append(late, Errorf("hold", h.cfg.Name, "renewal late: none confirmed for %v of the %v lease, which runs out in %v",
				since.Round(time.Millisecond), h.cfg.TTL, max(d.Sub(now), 0).Round(time.Millisecond)))
		}
	}
	return late
}
