package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The kit's servers and Clients end with each test: nothing is left.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
