//go:build !race

package examples_test

// raceEnabled: the tests run under -race, so the examples are built with it.
const raceEnabled = false
