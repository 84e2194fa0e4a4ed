package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// row is one line of a summary table: a metric of one scenario, a cell per
// library.
type row struct {
	scenario, metric string
	bench            string   // the scenario's benchmark; the library follows it
	units            []string // one value, or two shown as "a / b"
	format           func(float64) string
}

// loopback is docs/benchmarks.md's loopback table, from bench/bench_test.go's first five
// benchmarks.
var loopback = []row{
	{"uncontended acquire+release", "µs/op", "BenchmarkUncontended", []string{"ns/op"}, perThousand},
	{"", "round trips/op", "BenchmarkUncontended", []string{"roundtrips/op"}, num},
	{"", "allocs/op", "BenchmarkUncontended", []string{"allocs/op"}, num},
	{"", "B/op", "BenchmarkUncontended", []string{"B/op"}, num},
	{"32 goroutines, distinct keys", "ops/s", "BenchmarkParallelDistinct", []string{"ops/s"}, num},
	{"64 goroutines, one key (250µs held)", "handoffs/s", "BenchmarkContended", []string{"handoffs/s"}, num},
	{"", "handoff p50 / p99", "BenchmarkContended", []string{"p50-µs", "p99-µs"}, micros},
	{"", "round trips/handoff", "BenchmarkContended", []string{"roundtrips/handoff"}, num},
	{"10,000 waiters on 1,000 names", "TCP connections", "BenchmarkManyWaiters", []string{"conns"}, num},
	{"", "subscriptions", "BenchmarkManyWaiters", []string{"subscriptions"}, num},
	{"", "heap per waiter", "BenchmarkManyWaiters", []string{"heapB/waiter"}, kib},
	{"10,000 renewed leases", "round trips per tick", "BenchmarkRenewal", []string{"roundtrips/tick"}, num},
	{"", "CPU per tick", "BenchmarkRenewal", []string{"cpu-ms/tick"}, millis},
}

// redisCost is docs/benchmarks.md's table of what an acquire+release costs Redis.
var redisCost = []row{
	{"uncontended", "Redis CPU µs/op", "BenchmarkUncontended", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkUncontended", []string{"redis-µs/op"}, num},
	{"", "scripts / commands per op", "BenchmarkUncontended", []string{"scripts/op", "cmds/op"}, num},
	{"32 goroutines, distinct keys", "Redis CPU µs/op", "BenchmarkParallelDistinct", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkParallelDistinct", []string{"redis-µs/op"}, num},
	{"", "scripts / commands per op", "BenchmarkParallelDistinct", []string{"scripts/op", "cmds/op"}, num},
}

// network is the rows of one delay of docs/benchmarks.md's network table.
func network(delay string) []row {
	b := "BenchmarkNetwork/delay=" + delay + "/"
	return []row{
		{"uncontended", "ops/s", b + "uncontended", []string{"ops/s"}, num},
		{"", "p50 / p99", b + "uncontended", []string{"p50-µs", "p99-µs"}, micros},
		{"32 goroutines, distinct keys", "ops/s", b + "distinct", []string{"ops/s"}, num},
		{"", "p50 / p99", b + "distinct", []string{"p50-µs", "p99-µs"}, micros},
		{"64 goroutines, one key", "handoffs/s", b + "contended", []string{"handoffs/s"}, num},
		{"", "handoff p50 / p99", b + "contended", []string{"p50-µs", "p99-µs"}, micros},
		{"", "round trips/handoff", b + "contended", []string{"roundtrips/handoff"}, num},
	}
}

// baseline is the benchmark line bench.sh writes for redis-benchmark's run
// of the same acquire and release scripts.
const baseline = "BenchmarkRedisBenchmark/acquire+release"

// Summarize writes the medians of rs as docs/benchmarks.md's Markdown tables,
// then the targets computed from them. A table with no results is left out;
// a missing cell is "–".
func Summarize(w io.Writer, rs *Results) {
	libs := libraries(rs)
	var delays []string
	for _, s := range rs.Under("BenchmarkNetwork") {
		if d := s.Params["delay"]; d != "" && !slices.Contains(delays, d) {
			delays = append(delays, d)
		}
	}
	if len(delays) > 0 {
		fmt.Fprintf(w, "### Network: Redis one hop away (proxy delay each way)\n\n")
		writeHeader(w, []string{"delay (PING p50 / p99)", "scenario", "metric"}, libs)
		for _, d := range delays {
			rtt := cell(rs, "BenchmarkNetwork/delay="+d+"/ping", []string{"p50-µs", "p99-µs"}, micros)
			first := fmt.Sprintf("%s (%s)", d, rtt)
			for i, r := range network(d) {
				if i > 0 {
					first = ""
				}
				writeRow(w, rs, []string{first, r.scenario, r.metric}, r, libs)
			}
		}
		fmt.Fprintln(w)
	}
	table(w, rs, "### Loopback", loopback, libs)
	table(w, rs, "### What an acquire+release costs Redis", redisCost, libs)
	targets(w, rs)
}

// libraries are the libraries of BenchmarkUncontended, or of any benchmark,
// in the order first read.
func libraries(rs *Results) []string {
	var libs []string
	for _, bench := range []string{"BenchmarkUncontended", "BenchmarkParallelDistinct", "BenchmarkScaleGoroutines"} {
		for _, s := range rs.Under(bench) {
			if s.Rest != "" && !slices.Contains(libs, s.Rest) {
				libs = append(libs, s.Rest)
			}
		}
		if len(libs) > 0 {
			break
		}
	}
	return libs
}

func table(w io.Writer, rs *Results, title string, rows []row, libs []string) {
	if !slices.ContainsFunc(rows, func(r row) bool { return len(rs.Under(r.bench)) > 0 }) {
		return
	}
	fmt.Fprintf(w, "%s\n\n", title)
	writeHeader(w, []string{"scenario", "metric"}, libs)
	for _, r := range rows {
		writeRow(w, rs, []string{r.scenario, r.metric}, r, libs)
	}
	fmt.Fprintln(w)
}

func writeHeader(w io.Writer, first, libs []string) {
	cols := append(slices.Clone(first), libs...)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
}

func writeRow(w io.Writer, rs *Results, first []string, r row, libs []string) {
	cells := slices.Clone(first)
	for _, lib := range libs {
		cells = append(cells, cell(rs, r.bench+"/"+lib, r.units, r.format))
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// cell is the medians of name in units, formatted and joined by " / ".
func cell(rs *Results, name string, units []string, format func(float64) string) string {
	var parts []string
	for _, u := range units {
		v, ok := rs.Median(name, u)
		if !ok {
			return "–"
		}
		parts = append(parts, format(v))
	}
	return strings.Join(parts, " / ")
}

// targets writes the targets of docs/benchmarks.md as measured, each with its ratio.
func targets(w io.Writer, rs *Results) {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	med := func(name, unit string) (float64, bool) { return rs.Median(name, unit) }

	if lh, ok := med("BenchmarkParallelDistinct/leasehold", "ops/s"); ok {
		if rl, ok := med("BenchmarkParallelDistinct/rueidislock", "ops/s"); ok {
			add("target 1, distinct keys: leasehold %s ops/s = %.2fx rueidislock's %s (target >= 1.5x)", num(lh), lh/rl, num(rl))
		}
		if base, ok := med(baseline, "ops/s"); ok {
			add("target 1, distinct keys: leasehold = %.2f of redis-benchmark's %s acquire+release pairs/s of the same scripts (target >= 0.85)",
				lh/base, num(base))
		}
	}
	if lh, ok := med("BenchmarkUncontended/leasehold", "ns/op"); ok {
		for _, s := range rs.Under("BenchmarkUncontended") {
			if s.Rest == "leasehold" {
				continue
			}
			if peer, ok := med(s.Name, "ns/op"); ok {
				add("target 2, uncontended: leasehold %s µs/op = %.2fx %s's throughput (%s µs/op; target >= 1.0x)",
					perThousand(lh), peer/lh, s.Rest, perThousand(peer))
			}
		}
	}
	if rt, ok := med("BenchmarkContended/leasehold", "roundtrips/handoff"); ok {
		peer, _ := med("BenchmarkContended/rueidislock", "roundtrips/handoff")
		p99, _ := med("BenchmarkContended/leasehold", "p99-µs")
		add("target 3, contended: leasehold %s round trips/handoff (rueidislock %s; target <= 3.1), p99 %s (target < 500µs)",
			num(rt), num(peer), micros(p99))
	}
	if a, ok := med(baseline, "acquire/s"); ok {
		r, _ := med(baseline, "release/s")
		f, _ := med(baseline, "freed")
		add("baseline: redis-benchmark runs lock_acquire at %s/s and lock_release at %s/s (%.0f%% of them freeing a held lock)",
			num(a), num(r), 100*f)
	}
	if len(out) == 0 {
		return
	}
	fmt.Fprintf(w, "### Targets (medians)\n\n")
	for _, s := range out {
		fmt.Fprintf(w, "- %s\n", s)
	}
	fmt.Fprintln(w)
}

// num formats v to three significant digits, with a k or M suffix from ten
// thousand on: 4.12, 55.3k, 748.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return sig3(v/1e6) + "M"
	case a >= 1e4:
		return sig3(v/1e3) + "k"
	}
	return sig3(v)
}

// sig3 is v to three significant digits, at least, without an exponent or
// trailing zeros: 1234 is 1234, 55.34 is 55.3, 4.10 is 4.1, 0.6612 is 0.661.
func sig3(v float64) string {
	var s string
	switch a := math.Abs(v); {
	case a >= 100 || a == 0:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	default:
		s = fmt.Sprintf("%.3g", v)
	}
	if strings.Contains(s, ".") && !strings.Contains(s, "e") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func perThousand(v float64) string { return num(v / 1e3) }

// micros formats a duration in µs: 391µs, 2.52ms.
func micros(us float64) string {
	if us >= 1000 {
		return sig3(us/1e3) + "ms"
	}
	return sig3(us) + "µs"
}

func millis(ms float64) string { return sig3(ms) + "ms" }

func kib(b float64) string { return sig3(b/1024) + " KiB" }
