// Command benchchart draws leasehold's scaling curves, and tabulates its
// benchmarks, from `go test -bench` output files: the medians of each
// benchmark's runs (-count).
//
// Usage:
//
//	benchchart [-o DIR] [-md FILE] FILE...
//
// With -o, it writes into DIR one PNG per curve that the results have points
// for (bench/bench_test.go's Scale benchmarks):
//
//	goroutines.png         ops/s vs goroutines, a line per library
//	waiters-latency.png    wake-up p50 and p99 vs waiters
//	waiters-memory.png     heap and goroutine stack per waiter vs waiters
//	keeper-cpu.png         client and Redis CPU per renewal tick vs leases
//	keeper-roundtrips.png  round trips per renewal tick vs leases
//
// With -md, it writes the tables of docs/benchmarks.md (network, loopback,
// what an op costs Redis, leasehold over each peer, the lock kinds, who gets
// a lock that several processes contend for, fair waiters keeping their
// places) and its targets, as Markdown, into FILE (- for standard output). Runners named leasehold-SOMETHING (the kinds and
// variants) go in the kinds' table only. bench.sh runs it from this directory:
//
//	go run . -o ../../docs/bench ../../bench/scale.txt
//	go run . -md ../../bench/summary.md ../../bench/latest.txt ../../bench/redis-benchmark.txt
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchchart:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchchart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("o", "", "write the PNGs into this directory")
	md := fs.String("md", "", "write the Markdown tables into this file (- for standard output)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchchart [-o DIR] [-md FILE] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || (*dir == "" && *md == "") {
		fs.Usage()
		return errors.New("want -o, -md or both, and benchmark output files")
	}
	rs := NewResults()
	for _, name := range fs.Args() {
		if err := readFile(rs, name); err != nil {
			return err
		}
	}
	if len(rs.Names()) == 0 {
		return fmt.Errorf("no benchmark results in %s", strings.Join(fs.Args(), ", "))
	}
	if *dir != "" {
		if err := drawAll(rs, *dir, stdout, stderr); err != nil {
			return err
		}
	}
	if *md == "" {
		return nil
	}
	if *md == "-" {
		Summarize(stdout, rs)
		return nil
	}
	f, err := os.Create(*md)
	if err != nil {
		return err
	}
	Summarize(f, rs)
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *md)
	return nil
}

func drawAll(rs *Results, dir string, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range charts {
		ok, err := c.draw(rs, dir)
		switch {
		case err != nil:
			return err
		case ok:
			fmt.Fprintf(stdout, "wrote %s/%s\n", dir, c.file)
		default:
			fmt.Fprintf(stderr, "benchchart: no %s results: %s not drawn\n", c.bench, c.file)
		}
	}
	return nil
}

func readFile(rs *Results, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := rs.Read(f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
