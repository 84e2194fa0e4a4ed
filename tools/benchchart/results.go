package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Results are the values of benchmark runs, by benchmark name and unit, as
// `go test -bench` prints them, one line per run:
//
//	BenchmarkContended/leasehold-2   1000   1234 ns/op   748 handoffs/s
//
// The name is kept without its -GOMAXPROCS suffix, so that runs on machines
// of different sizes line up.
type Results struct {
	names  []string // in the order first read
	values map[string]map[string][]float64
}

// NewResults returns empty Results.
func NewResults() *Results {
	return &Results{values: make(map[string]map[string][]float64)}
}

// Read adds the benchmark lines of r. Other lines (the goos, pkg, PASS and
// ok lines, a benchmark's log) are skipped; a benchmark line whose values do
// not parse is an error, named by its line number.
func (rs *Results) Read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		name, vals, ok, err := parseLine(sc.Text())
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if !ok {
			continue
		}
		byUnit := rs.values[name]
		if byUnit == nil {
			byUnit = make(map[string][]float64)
			rs.values[name] = byUnit
			rs.names = append(rs.names, name)
		}
		for _, v := range vals {
			byUnit[v.unit] = append(byUnit[v.unit], v.value)
		}
	}
	return sc.Err()
}

type measure struct {
	value float64
	unit  string
}

// parseLine reads one benchmark line: its name, an iteration count, then
// value-unit pairs. ok is false for any line that is not one.
func parseLine(line string) (name string, vals []measure, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return "", nil, false, nil
	}
	if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
		return "", nil, false, nil // "BenchmarkX ... " as a log line, not a result
	}
	for i := 2; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false, fmt.Errorf("%s: value %q of %s: %w", f[0], f[i], f[i+1], err)
		}
		vals = append(vals, measure{v, f[i+1]})
	}
	return trimRound(trimProcs(f[0])), vals, true, nil
}

// trimProcs drops the -N that go test appends to a name when GOMAXPROCS is
// not 1.
func trimProcs(name string) string { return trimNumber(name, '-') }

// trimRound drops the #NN that go test appends to a sub-benchmark run again
// under the same name (the bench module's -rounds): every round is a run of
// one benchmark.
func trimRound(name string) string { return trimNumber(name, '#') }

// trimNumber drops the last sep of name and the number after it, if a
// number follows it.
func trimNumber(name string, sep byte) string {
	i := strings.LastIndexByte(name, sep)
	if i < 0 || i == len(name)-1 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// Names returns the benchmark names in the order first read.
func (rs *Results) Names() []string { return slices.Clone(rs.names) }

// Median is the median of the values of name in unit over every run read,
// and false when there is none.
func (rs *Results) Median(name, unit string) (float64, bool) {
	vs := rs.values[name][unit]
	if len(vs) == 0 {
		return 0, false
	}
	return median(vs), true
}

// median returns the middle value of vs, or the mean of the two middle ones
// when their number is even; it does not reorder vs. vs is not empty.
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Under splits the names that begin with prefix+"/" into their key=value
// parameters and the rest: for "BenchmarkScaleGoroutines/goroutines=4/redsync"
// under "BenchmarkScaleGoroutines", params {goroutines: "4"} and rest
// "redsync". Names come in the order first read.
func (rs *Results) Under(prefix string) []Sub {
	var subs []Sub
	for _, name := range rs.names {
		tail, ok := strings.CutPrefix(name, prefix+"/")
		if !ok {
			continue
		}
		s := Sub{Name: name, Params: make(map[string]string)}
		var rest []string
		for part := range strings.SplitSeq(tail, "/") {
			if k, v, ok := strings.Cut(part, "="); ok {
				s.Params[k] = v
			} else {
				rest = append(rest, part)
			}
		}
		s.Rest = strings.Join(rest, "/")
		subs = append(subs, s)
	}
	return subs
}

// Sub is one benchmark under a prefix: see Results.Under.
type Sub struct {
	Name   string
	Params map[string]string
	Rest   string
}
