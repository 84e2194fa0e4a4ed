package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run draws every chart the fixture has points for, each a PNG, and the
// Markdown tables.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "summary.md")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", dir, "-md", md, "testdata/bench.txt"}, &stdout, &stderr); err != nil {
		t.Fatalf("%v; stderr: %s", err, stderr.String())
	}
	for _, c := range charts {
		f, err := os.Open(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 400 || cfg.Height < 200 {
			t.Errorf("%s: %+v, %v", c.file, cfg, err)
		}
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| delay (PING p50 / p99) | scenario | metric | leasehold | rueidislock | redisson |",
		"| 250us (610µs / 900µs) | uncontended | ops/s | 800 | 780 |",
		"| uncontended acquire+release | µs/op | 200 | 200 |",
		"| 64 goroutines, one key | handoffs/s | 748 | 680 |",
		"| 10,000 waiters on 1,000 names | TCP connections | – | – |",
		"|  | scripts / commands per op | 2 / 2 | 2 / 2 |",
		"ParallelDistinct, ops/s: 1.50x rueidislock (target >= 1.1x): met",
		"Contended, handoffs/s: 1.10x rueidislock (target >= 2x): not met",
		"Uncontended, allocations per acquire+release: 18 (target <= 7, half of the 14 before): not met",
		"Uncontended, acquire+release throughput: 1.00x rueidislock (target >= 1x): met",
		"leasehold = 0.75 of redis-benchmark's 80k",
		"leasehold 4.1 round trips/handoff (rueidislock 3.1; target: one), p99 391µs",
		// The peers' tables have redisson, the kinds a table of their own.
		"| uncontended acquire+release | µs/op | 200 | 200 | 400 |",
		"|  | ops/s | 5000 | 5000 | 2500 |",
		"|  | scripts / commands per op | 2 / 2 | 2 / 2 | 2 / 3 |",
		"| 64 goroutines, distinct keys | ops/s | 60k | 40k | 48k |",
		"| 64 goroutines, one key | handoffs/s | 748 | 680 | 374 |",
		"| scenario | metric | rueidislock | redisson |",
		"| uncontended | ops/s | 1.00x | 2.00x |",
		"|  | Redis CPU µs/op | 0.83x | 1.25x |",
		"| 64 goroutines, one key | handoffs/s | 1.10x | 2.00x |",
		"| scenario | metric | leasehold | leasehold-fair | leasehold-notracking |",
		"| 64 goroutines, distinct keys | ops/s | 60k | 30k | – |",
		"| 500 | 5 | 4501 | 300 | 4201 | 300 | 6.54ms |",
		// Who gets the lock, per run of ContendedClients, medians of each
		// metric over the rounds (leasehold's of 3), and the targets on it.
		"| run | handoffs/s | shares of processes 1 / 2 / 3 | smallest share ÷ even share | longest wait |",
		"| leasehold | 8700 | 0.32 / 0.36 / 0.34 | 0.93 | 7.69ms |",
		"| rueidislock | 2600 | 0.355 / 0.346 / 0.298 | 0.895 | 100ms |",
		"| leasehold+redisson | 5776 | 0.8 / 0.133 / 0.0667 | 0.2 | 83ms |",
		"ContendedClients, leasehold: the smallest process's share is 0.93 of an even share (target >= 0.25): met; longest wait 7.69ms",
		"ContendedClients, leasehold+redisson: the smallest process's share is 0.20 of an even share (target >= 0.25): not met; longest wait 83ms",
		"ContendedClients, handoffs/s: 3.35x rueidislock (target >= 1.1x): met",
		"| 500 | 1 | 4501 | 300 | 4201 | 300 | 6.66ms |",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("summary lacks %q:\n%s", want, b)
		}
	}
}

// Results without any Scale benchmark draw nothing, and say so.
func TestRunWithoutCurves(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte("BenchmarkUncontended/leasehold-2 10 5 ns/op\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-o", t.TempDir(), in}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "goroutines.png not drawn") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if err := run([]string{"-o", t.TempDir(), "testdata/none.txt"}, &stdout, &stderr); err == nil {
		t.Error("no error for a missing file")
	}
}

// The kinds and variants, named leasehold-SOMETHING, stay out of the peer
// comparison: no column of theirs in the peers' tables, no ratio, no target.
func TestKindsApart(t *testing.T) {
	rs := readFixture(t)
	var b strings.Builder
	Summarize(&b, rs)
	loopback, _, _ := strings.Cut(b.String(), "### Lock kinds")
	for _, kind := range []string{"leasehold-fair", "leasehold-notracking"} {
		if strings.Contains(loopback, kind) {
			t.Errorf("%s outside the kinds' table:\n%s", kind, loopback)
		}
	}
}
