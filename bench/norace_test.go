//go:build !race

package bench_test

// raceDetector says that the benchmarks run under the race detector.
const raceDetector = false
