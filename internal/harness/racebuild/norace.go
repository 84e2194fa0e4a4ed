//go:build !race

// Package racebuild says whether the binary was built with -race, for tests
// and benchmarks whose load or build flags must allow for the detector's
// overhead (several times a plain build's).
package racebuild

// Enabled is false: this binary runs without the race detector.
const Enabled = false
