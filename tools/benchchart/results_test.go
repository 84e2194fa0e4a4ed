package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tt := range []struct {
		give     string
		name     string
		vals     []measure
		ok, fail bool
	}{
		{
			give: "BenchmarkContended/leasehold-2   \t 700\t 1336000 ns/op\t 748.0 handoffs/s",
			name: "BenchmarkContended/leasehold", vals: []measure{{1336000, "ns/op"}, {748, "handoffs/s"}}, ok: true,
		},
		{
			give: "BenchmarkRedisBenchmark/acquire+release 200000 80000 ops/s",
			name: "BenchmarkRedisBenchmark/acquire+release", vals: []measure{{80000, "ops/s"}}, ok: true,
		},
		{
			give: "BenchmarkX/goroutines=16-128 10 5 ns/op",
			name: "BenchmarkX/goroutines=16", vals: []measure{{5, "ns/op"}}, ok: true,
		},
		{
			give: "BenchmarkContended/leasehold#04-2 700 1336000 ns/op",
			name: "BenchmarkContended/leasehold", vals: []measure{{1336000, "ns/op"}}, ok: true,
		},
		{give: "BenchmarkScaleWaiters/waiters=100"}, // printed before a benchmark's log
		{give: "BenchmarkX 10 5"},                   // a value without its unit
		{give: "BenchmarkX logged: 10 ns/op"},       // no iteration count
		{give: "ok  \tgithub.com/leasehold/leasehold\t52.067s"},
		{give: "PASS"},
		{give: ""},
		{give: "BenchmarkX-2 10 fast ns/op", fail: true},
	} {
		t.Run(tt.give, func(t *testing.T) {
			name, vals, ok, err := parseLine(tt.give)
			if (err != nil) != tt.fail {
				t.Fatalf("error %v, want failure %v", err, tt.fail)
			}
			if ok != tt.ok || name != tt.name || !slices.Equal(vals, tt.vals) {
				t.Errorf("got %q %v %v, want %q %v %v", name, vals, ok, tt.name, tt.vals, tt.ok)
			}
		})
	}
}

func TestTrimProcs(t *testing.T) {
	for give, want := range map[string]string{
		"BenchmarkA-2":               "BenchmarkA",
		"BenchmarkA/b-64":            "BenchmarkA/b",
		"BenchmarkA":                 "BenchmarkA",
		"BenchmarkA/delay=1ms":       "BenchmarkA/delay=1ms",
		"BenchmarkA/x-":              "BenchmarkA/x-",
		"BenchmarkA/acquire+release": "BenchmarkA/acquire+release",
	} {
		if got := trimProcs(give); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", give, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		give []float64
		want float64
	}{
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9, 5}, 5},
	} {
		give := slices.Clone(tt.give)
		if got := median(give); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.give, got, tt.want)
		}
		if !slices.Equal(give, tt.give) {
			t.Errorf("median reordered its argument: %v", give)
		}
	}
}

// The fixture holds three runs of some benchmarks (-count 3), one of
// others, a benchmark's log line and bench.sh's redis-benchmark line.
func TestReadFixture(t *testing.T) {
	rs := readFixture(t)
	for _, tt := range []struct {
		name, unit string
		want       float64
	}{
		{"BenchmarkUncontended/leasehold", "ns/op", 200000},   // of 200k, 100k, 300k
		{"BenchmarkUncontended/rueidislock", "ns/op", 200000}, // of 250k, 150k
		{"BenchmarkScaleGoroutines/goroutines=1/leasehold", "ops/s", 3000},
		{"BenchmarkScaleWaiters/waiters=100", "stackB/waiter", 8520},
		{"BenchmarkRedisBenchmark/acquire+release", "freed", 0.95},
	} {
		got, ok := rs.Median(tt.name, tt.unit)
		if !ok || got != tt.want {
			t.Errorf("Median(%s, %s) = %v, %v; want %v", tt.name, tt.unit, got, ok, tt.want)
		}
	}
	if _, ok := rs.Median("BenchmarkUncontended/redsync", "ns/op"); ok {
		t.Error("a median of a benchmark that never ran")
	}
	names := rs.Names()
	if len(names) != 32 || names[0] != "BenchmarkUncontended/leasehold" || names[1] != "BenchmarkUncontended/rueidislock" {
		t.Errorf("names %d, in order %v", len(names), names)
	}
	var got []string
	for _, s := range rs.Under("BenchmarkScaleGoroutines") {
		got = append(got, s.Params["goroutines"]+":"+s.Rest)
	}
	want := []string{"1:leasehold", "1:rueidislock", "2:leasehold", "2:rueidislock", "4:leasehold", "4:rueidislock"}
	if !slices.Equal(got, want) {
		t.Errorf("Under: %v, want %v", got, want)
	}
}

func TestReadError(t *testing.T) {
	err := NewResults().Read(strings.NewReader("PASS\nBenchmarkX-2 1 fast ns/op\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("got %v, want an error naming line 2", err)
	}
}

func readFixture(t *testing.T) *Results {
	t.Helper()
	f, err := os.Open("testdata/bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs := NewResults()
	if err := rs.Read(f); err != nil {
		t.Fatal(err)
	}
	return rs
}
