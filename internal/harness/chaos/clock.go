package chaos

import (
	"time"

	"golang.org/x/sys/unix"
)

// Mono is a reading of CLOCK_MONOTONIC in nanoseconds. Unlike time.Now's
// monotonic reading, which is relative to the process, it is comparable
// across the processes of one machine: that is what lets the checker order
// the critical sections of different workers.
type Mono int64

// Now reads CLOCK_MONOTONIC.
func Now() Mono {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("chaos: clock_gettime(CLOCK_MONOTONIC): " + err.Error()) // Linux always has it
	}
	return Mono(ts.Nano())
}

// Sub is m - o as a duration.
func (m Mono) Sub(o Mono) time.Duration { return time.Duration(m - o) }

// Add is m + d.
func (m Mono) Add(d time.Duration) Mono { return m + Mono(d) }
