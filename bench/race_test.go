//go:build race

package bench_test

// raceDetector says that the benchmarks run under the race detector (CI's
// -race -benchtime=1x run, which checks that they work, not how fast): its
// overhead, several times a plain build's, would make some of them crawl.
const raceDetector = true
