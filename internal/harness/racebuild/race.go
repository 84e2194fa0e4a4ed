//go:build race

package racebuild

// Enabled is true: this binary runs under the race detector.
const Enabled = true
