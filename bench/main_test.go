package bench_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Two goroutines of rueidis', not ours, may outlive a benchmark by a few
// seconds and end on their own (see the root package's TestMain).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
