package chaos

import (
	"fmt"
	"math"
	"time"

	"github.com/anishathalye/porcupine"
)

// access is an operation on the fenced resource as porcupine sees it: its
// input is the token, the phase and the value an exit writes; its output
// whether the resource took it and the value read or written.
type access struct {
	token uint64
	phase string
	value int64 // an exit's value; the value read or written, as output
}

type outcome struct {
	taken bool
	value int64
}

// fenced is the state of the resource: the number and the highest token
// taken (-1: none yet).
type fenced struct {
	value int64
	high  int64
}

// fenceModel is the sequential specification of the fenced resource under a
// lock: an access whose token is below the highest taken is refused, any
// other is taken and raises the mark to its token; a read returns the
// number; a write sets it, and must be one more than the number it
// replaces: a section writes one more than it read, so a write that
// replaces another value lost another section's update. A history is
// linearizable under it if the sections' reads and writes, each at some
// moment between its call and its reply, make a sequence where every
// section that wrote did so on the latest value.
var fenceModel = porcupine.Model{
	Init: func() any { return fenced{high: -1} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(fenced), input.(access), output.(outcome)
		if int64(in.token) < s.high {
			return !out.taken, s
		}
		if !out.taken {
			return false, s
		}
		next := fenced{value: s.value, high: int64(in.token)}
		if in.phase == "exit" {
			next.value = in.value
			return in.value == s.value+1 && out.value == in.value, next
		}
		return out.value == s.value, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(access), output.(outcome)
		verdict := "refused"
		if out.taken {
			verdict = fmt.Sprint(out.value)
		}
		if in.phase == "exit" {
			return fmt.Sprintf("write(%d, token %d) -> %s", in.value, in.token, verdict)
		}
		return fmt.Sprintf("read(token %d) -> %s", in.token, verdict)
	},
	DescribeState: func(state any) string {
		s := state.(fenced)
		return fmt.Sprintf("%d (fence %d)", s.value, s.high)
	},
}

// never is the reply time of an access whose reply never came: porcupine
// may place it anywhere after its call.
const never = math.MaxInt64

// History is the resource's history as porcupine checks it: every access
// the workers recorded with its reply (call when it was issued, return when
// the reply came), and every access the resource's log shows taken that no
// reply tells of (a killed process's last, or one whose reply was lost),
// with no return. An access that got no reply and is not in the log did
// nothing: it is left out.
func History(secs []Section, log []Accepted) []porcupine.Operation {
	logged := make(map[logKey]Accepted, len(log))
	for _, e := range log {
		logged[keyOf(e)] = e
	}
	var ops []porcupine.Operation
	client := 0
	for _, s := range secs {
		for _, w := range s.Writes {
			k := logKey{s.Token, s.ID, w.Phase, w.Issued}
			e, taken := logged[k]
			delete(logged, k)
			in := access{token: s.Token, phase: w.Phase, value: e.Value}
			switch {
			case w.Err == "":
				if w.Phase == "exit" {
					in.value = w.Value
				}
				ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Call: int64(w.Issued),
					Output: outcome{w.Accepted, w.Value}, Return: int64(w.Done)})
			case taken:
				ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Call: int64(w.Issued),
					Output: outcome{true, e.Value}, Return: never})
			}
		}
		client++
	}
	for _, e := range logged {
		ops = append(ops, porcupine.Operation{ClientId: client, Input: access{token: e.Token, phase: e.Phase, value: e.Value},
			Call: int64(e.Issued), Output: outcome{true, e.Value}, Return: never})
		client++
	}
	return ops
}

// Linearity is porcupine's verdict on a history.
type Linearity struct {
	Ops    int // accesses checked
	Result porcupine.CheckResult
	Took   time.Duration
	info   porcupine.LinearizationInfo
}

// CheckLinear checks with porcupine that the accesses to the fenced
// resource are linearizable under fenceModel; it gives up (Unknown) after
// timeout.
func CheckLinear(secs []Section, log []Accepted, timeout time.Duration) *Linearity {
	ops := History(secs, log)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(fenceModel, ops, timeout)
	return &Linearity{Ops: len(ops), Result: res, Took: time.Since(start), info: info}
}

// Visualize writes porcupine's HTML view of the history to path: for an
// Illegal one, the longest sequences it could make and where they end.
func (l *Linearity) Visualize(path string) error {
	return porcupine.VisualizePath(fenceModel, l.info, path)
}

// String is the verdict on one line.
func (l *Linearity) String() string {
	return fmt.Sprintf("porcupine: %s over %d accesses (%v)", l.Result, l.Ops, l.Took.Round(time.Millisecond))
}
