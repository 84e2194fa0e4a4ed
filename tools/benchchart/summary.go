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
	{"", "ops/s", "BenchmarkUncontended", []string{"ns/op"}, perSecond},
	{"", "round trips/op", "BenchmarkUncontended", []string{"roundtrips/op"}, num},
	{"", "CPU halts/op (the machine's)", "BenchmarkUncontended", []string{"halts/op"}, num},
	{"", "allocs/op", "BenchmarkUncontended", []string{"allocs/op"}, num},
	{"", "B/op", "BenchmarkUncontended", []string{"B/op"}, num},
	{"64 goroutines, distinct keys", "ops/s", "BenchmarkParallelDistinct", []string{"ops/s"}, num},
	{"", "CPU halts/op (the machine's)", "BenchmarkParallelDistinct", []string{"halts/op"}, num},
	{"64 goroutines, one key", "handoffs/s", "BenchmarkContended", []string{"handoffs/s"}, num},
	{"", "handoff p50 / p99", "BenchmarkContended", []string{"p50-µs", "p99-µs"}, micros},
	{"", "round trips/handoff", "BenchmarkContended", []string{"roundtrips/handoff"}, num},
	{"", "CPU halts/handoff (the machine's)", "BenchmarkContended", []string{"halts/op"}, num},
	{"3 Clients x 5 goroutines, one key", "handoffs/s", "BenchmarkContendedClients", []string{"handoffs/s"}, num},
	{"", "round trips/handoff", "BenchmarkContendedClients", []string{"roundtrips/handoff"}, num},
	{"10,000 waiters on 1,000 names", "TCP connections", "BenchmarkManyWaiters", []string{"conns"}, num},
	{"", "subscriptions", "BenchmarkManyWaiters", []string{"subscriptions"}, num},
	{"", "heap per waiter", "BenchmarkManyWaiters", []string{"heapB/waiter"}, kib},
	{"10,000 renewed leases", "round trips per tick", "BenchmarkRenewal", []string{"roundtrips/tick"}, num},
	{"", "CPU per tick", "BenchmarkRenewal", []string{"cpu-ms/tick"}, millis},
}

// redisCost is docs/benchmarks.md's table of what an acquire+release, and a
// handoff, cost Redis (a script's calls count among the commands Redis ran).
var redisCost = []row{
	{"uncontended", "Redis CPU µs/op", "BenchmarkUncontended", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkUncontended", []string{"redis-µs/op"}, num},
	{"", "scripts / commands per op", "BenchmarkUncontended", []string{"scripts/op", "cmds/op"}, num},
	{"", "commands Redis ran per op", "BenchmarkUncontended", []string{"redis-cmds/op"}, num},
	{"64 goroutines, distinct keys", "Redis CPU µs/op", "BenchmarkParallelDistinct", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkParallelDistinct", []string{"redis-µs/op"}, num},
	{"", "scripts / commands per op", "BenchmarkParallelDistinct", []string{"scripts/op", "cmds/op"}, num},
	{"", "commands Redis ran per op", "BenchmarkParallelDistinct", []string{"redis-cmds/op"}, num},
	{"64 goroutines, one key", "Redis CPU µs/handoff", "BenchmarkContended", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/handoff", "BenchmarkContended", []string{"redis-µs/op"}, num},
	{"", "commands Redis ran per handoff", "BenchmarkContended", []string{"redis-cmds/op"}, num},
}

// kindRows is docs/benchmarks.md's table of leasehold's lock kinds (and
// variants), each a column beside rlock's (the leasehold column), in the
// three scenarios that run them (bench -bench.kinds -bench.variants).
var kindRows = []row{
	{"uncontended acquire+release", "µs/op", "BenchmarkUncontended", []string{"ns/op"}, perThousand},
	{"", "allocs/op", "BenchmarkUncontended", []string{"allocs/op"}, num},
	{"", "Redis CPU µs/op", "BenchmarkUncontended", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkUncontended", []string{"redis-µs/op"}, num},
	{"", "scripts / commands per op", "BenchmarkUncontended", []string{"scripts/op", "cmds/op"}, num},
	{"64 goroutines, distinct keys", "ops/s", "BenchmarkParallelDistinct", []string{"ops/s"}, num},
	{"", "Redis CPU µs/op", "BenchmarkParallelDistinct", []string{"redis-cpu-µs/op"}, num},
	{"", "commandstats µs/op", "BenchmarkParallelDistinct", []string{"redis-µs/op"}, num},
	{"64 goroutines, one key", "handoffs/s", "BenchmarkContended", []string{"handoffs/s"}, num},
	{"", "handoff p50 / p99", "BenchmarkContended", []string{"p50-µs", "p99-µs"}, micros},
	{"", "round trips/handoff", "BenchmarkContended", []string{"roundtrips/handoff"}, num},
}

// ratio is one row of the table of leasehold against each peer: leasehold's
// median over the peer's of unit in bench, or the inverse when inverse is set
// (a time per op, so that the ratio is one of throughputs).
type ratio struct {
	scenario, metric string
	bench, unit      string
	inverse          bool
}

// ratios is docs/benchmarks.md's table of leasehold against each peer. Above
// 1 is more throughput, or more cost to Redis, than the peer's.
var ratios = []ratio{
	{"uncontended", "ops/s", "BenchmarkUncontended", "ns/op", true},
	{"", "Redis CPU µs/op", "BenchmarkUncontended", "redis-cpu-µs/op", false},
	{"", "commandstats µs/op", "BenchmarkUncontended", "redis-µs/op", false},
	{"64 goroutines, distinct keys", "ops/s", "BenchmarkParallelDistinct", "ops/s", false},
	{"", "Redis CPU µs/op", "BenchmarkParallelDistinct", "redis-cpu-µs/op", false},
	{"", "commandstats µs/op", "BenchmarkParallelDistinct", "redis-µs/op", false},
	{"64 goroutines, one key", "handoffs/s", "BenchmarkContended", "handoffs/s", false},
	{"3 Clients x 5 goroutines, one key", "handoffs/s", "BenchmarkContendedClients", "handoffs/s", false},
}

// fairWaiters is the benchmark of fairqueue waiters keeping their places.
const fairWaiters = "BenchmarkFairWaiters"

// contendedClients is the benchmark of several processes on one key, whose
// runs (a library each, and mixes such as leasehold+redisson) report who got
// the lock: share-p1, share-p2, ... (each process's share of the
// acquisitions), min-share/even and max-wait-µs.
const contendedClients = "BenchmarkContendedClients"

// fairShare is the smallest share of the acquisitions, over an even share,
// that the targets allow any process (docs/rlock.md, "Every waiter gets its
// turn").
const fairShare = 0.25

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
	all := libraries(rs)
	libs, kinds := peersAndKinds(all)
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
	table(w, rs, "### What an acquire+release, and a handoff, cost Redis", redisCost, libs)
	ratioTable(w, rs, libs)
	if len(kinds) > 1 {
		table(w, rs, "### Lock kinds (leasehold column: rlock)", kindRows, kinds)
	}
	sharesTable(w, rs)
	fairTable(w, rs)
	targets(w, rs, libs)
}

// peersAndKinds splits libs into the peer comparison (leasehold and the
// peers) and leasehold's own runners: leasehold (rlock), then its kinds and
// variants, named leasehold-SOMETHING.
func peersAndKinds(libs []string) (peers, kinds []string) {
	for _, lib := range libs {
		if strings.HasPrefix(lib, "leasehold-") {
			kinds = append(kinds, lib)
		} else {
			peers = append(peers, lib)
		}
	}
	if len(kinds) > 0 {
		kinds = append([]string{"leasehold"}, kinds...)
	}
	return peers, kinds
}

// ratioTable writes leasehold's medians over each peer's, a column per peer.
func ratioTable(w io.Writer, rs *Results, libs []string) {
	var others []string
	for _, lib := range libs {
		if lib != "leasehold" {
			others = append(others, lib)
		}
	}
	if !slices.Contains(libs, "leasehold") || len(others) == 0 {
		return
	}
	fmt.Fprintf(w, "### leasehold against each peer (leasehold ÷ peer, medians)\n\n")
	writeHeader(w, []string{"scenario", "metric"}, others)
	for _, r := range ratios {
		cells := []string{r.scenario, r.metric}
		for _, peer := range others {
			cells = append(cells, ratioCell(rs, r, peer))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

func ratioCell(rs *Results, r ratio, peer string) string {
	v, ok := r.of(rs, peer)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// of is leasehold's median over peer's (or the inverse): false when either
// is missing or zero.
func (r ratio) of(rs *Results, peer string) (float64, bool) {
	lh, ok1 := rs.Median(r.bench+"/leasehold", r.unit)
	p, ok2 := rs.Median(r.bench+"/"+peer, r.unit)
	if !ok1 || !ok2 || p == 0 || lh == 0 {
		return 0, false
	}
	if r.inverse {
		return p / lh, true
	}
	return lh / p, true
}

// sharesTable writes a row per run of BenchmarkContendedClients: its
// handoffs/s, each process's share of the acquisitions, the smallest over an
// even share, and the longest wait of any waiter.
func sharesTable(w io.Writer, rs *Results) {
	cols := []string{"run", "handoffs/s", "shares of processes 1 / 2 / 3", "smallest share ÷ even share", "longest wait"}
	if runTable(w, rs, contendedClients, "### 3 Clients x 5 goroutines, one key: who gets the lock", cols, func(s Sub) []string {
		var units []string
		for i := 1; ; i++ {
			u := fmt.Sprintf("share-p%d", i)
			if _, ok := rs.Median(s.Name, u); !ok {
				break
			}
			units = append(units, u)
		}
		shares := "–"
		if len(units) > 0 {
			shares = cell(rs, s.Name, units, num)
		}
		return []string{s.Rest, cell(rs, s.Name, []string{"handoffs/s"}, num), shares,
			cell(rs, s.Name, []string{"min-share/even"}, num), cell(rs, s.Name, []string{"max-wait-µs"}, micros)}
	}) {
		fmt.Fprintf(w, "In leasehold+redisson, process 1 is the redisson runner, 2 and 3 leasehold.\n\n")
	}
}

// fairTable writes a row per run of BenchmarkFairWaiters (waiters, locks).
func fairTable(w io.Writer, rs *Results) {
	cols := []string{"waiters", "locks", "Redis commands", "scripts", "commands in scripts", "round trips", "Redis CPU"}
	runTable(w, rs, fairWaiters, "### Fair waiters keeping their places (per second)", cols, func(s Sub) []string {
		cells := []string{s.Params["waiters"], s.Params["locks"]}
		for _, u := range []string{"cmds/s", "scripts/s", "script-cmds/s", "roundtrips/s"} {
			cells = append(cells, cell(rs, s.Name, []string{u}, num))
		}
		return append(cells, cell(rs, s.Name, []string{"redis-cpu-ms/s"}, millis))
	})
}

// runTable writes title and a table of cols with a row per run under bench,
// its cells made by row, and reports whether it did: not when bench has no
// run.
func runTable(w io.Writer, rs *Results, bench, title string, cols []string, row func(Sub) []string) bool {
	subs := rs.Under(bench)
	if len(subs) == 0 {
		return false
	}
	fmt.Fprintf(w, "%s\n\n", title)
	writeHeader(w, cols, nil)
	for _, s := range subs {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row(s), " | "))
	}
	fmt.Fprintln(w)
	return true
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

// targets writes the targets of docs/benchmarks.md as measured, each with its
// ratio to the peers of libs.
func targets(w io.Writer, rs *Results, libs []string) {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	med := func(name, unit string) (float64, bool) { return rs.Median(name, unit) }

	// target adds the line of one "leasehold against a peer" target, r's
	// ratio to peer: at most bound for a cost, at least bound otherwise.
	target := func(what string, r ratio, peer string, cost bool, bound float64) {
		v, ok := r.of(rs, peer)
		if !ok {
			return
		}
		cmp, met := ">=", v >= bound
		if cost {
			cmp, met = "<=", v <= bound
		}
		add("%s: %.2fx %s (target %s %gx): %s", what, v, peer, cmp, bound, verdict(met))
	}
	// The leasehold row is the Client users make (Open); leasehold-new is
	// New's, the one it is held against.
	uncontended := ratio{bench: "BenchmarkUncontended", unit: "ns/op", inverse: true} // a throughput, from the time per op
	target("Uncontended, time per acquire+release", ratio{bench: "BenchmarkUncontended", unit: "ns/op"}, "leasehold-new", true, 1.05)
	for _, peer := range []string{"redisson", "rueidislock", "redsync", "redislock"} {
		target("Uncontended, acquire+release throughput", uncontended, peer, false, 1.0)
	}
	target("ParallelDistinct, ops/s", ratio{bench: "BenchmarkParallelDistinct", unit: "ops/s"}, "rueidislock", false, 1.1)
	target("ParallelDistinct, ops/s", ratio{bench: "BenchmarkParallelDistinct", unit: "ops/s"}, "redisson", false, 0.9)
	target("ParallelDistinct, Redis CPU per acquire+release", ratio{bench: "BenchmarkParallelDistinct", unit: "redis-cpu-µs/op"}, "redisson", true, 1.15)
	target("Contended, handoffs/s", ratio{bench: "BenchmarkContended", unit: "handoffs/s"}, "rueidislock", false, 2.0)
	target("ContendedClients, handoffs/s", ratio{bench: "BenchmarkContendedClients", unit: "handoffs/s"}, "rueidislock", false, 1.1)
	for _, run := range []string{"leasehold", "leasehold+redisson"} {
		if v, ok := med(contendedClients+"/"+run, "min-share/even"); ok {
			wait, _ := med(contendedClients+"/"+run, "max-wait-µs")
			add("ContendedClients, %s: the smallest process's share is %.2f of an even share (target >= %g): %s; longest wait %s",
				run, v, fairShare, verdict(v >= fairShare), micros(wait))
		}
	}
	if a, ok := med("BenchmarkUncontended/leasehold", "allocs/op"); ok {
		add("Uncontended, allocations per acquire+release: %s (target <= 7, half of the 14 before): %s",
			num(a), verdict(a <= 7))
	}
	if lh, ok := med("BenchmarkParallelDistinct/leasehold", "ops/s"); ok {
		if base, ok := med(baseline, "ops/s"); ok {
			add("ParallelDistinct: leasehold = %.2f of redis-benchmark's %s acquire+release pairs/s of the same scripts",
				lh/base, num(base))
		}
	}
	if rt, ok := med("BenchmarkContended/leasehold", "roundtrips/handoff"); ok {
		peer, _ := med("BenchmarkContended/rueidislock", "roundtrips/handoff")
		p99, _ := med("BenchmarkContended/leasehold", "p99-µs")
		add("Contended: leasehold %s round trips/handoff (rueidislock %s; target: one), p99 %s",
			num(rt), num(peer), micros(p99))
	}
	if a, ok := med(baseline, "acquire/s"); ok {
		r, _ := med(baseline, "release/s")
		f, _ := med(baseline, "freed")
		add("baseline: redis-benchmark runs lock_acquire at %s/s and lock_release_all at %s/s (%.0f%% of them freeing a held lock)",
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

// verdict says whether a target was met.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "not met"
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

// perSecond formats a time per op in ns as ops per second.
func perSecond(ns float64) string { return num(1e9 / ns) }

// micros formats a duration in µs: 391µs, 2.52ms.
func micros(us float64) string {
	if us >= 1000 {
		return sig3(us/1e3) + "ms"
	}
	return sig3(us) + "µs"
}

func millis(ms float64) string { return sig3(ms) + "ms" }

func kib(b float64) string { return sig3(b/1024) + " KiB" }
