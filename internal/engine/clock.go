package engine

import "time"

// clock makes the timers the wait loop sleeps on: real ones, or a test's.
// (A lease's deadline is the hold's business and always runs on the real
// clock.)
type clock interface {
	NewTimer(d time.Duration) timer
}

// timer is a stoppable, resettable timer, as *time.Timer.
type timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realClock struct{}

func (realClock) NewTimer(d time.Duration) timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time   { return t.t.C }
func (t realTimer) Reset(d time.Duration) { t.t.Reset(d) }
func (t realTimer) Stop()                 { t.t.Stop() }
