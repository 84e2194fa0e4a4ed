package retry

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every Redis reply, and every failure without one, is of one Class: the
// replies a server sends while it cannot serve for now (a busy script, memory
// full, a failover) are pauses, refusals of the input or the configuration
// are final, and a failure with no reply leaves the outcome unknown. The
// replies come from a real server (a script returning them as its error).
func TestClassify(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	reply := func(msg string) error {
		return rc.Do(context.Background(), rc.B().Eval().Script("return redis.error_reply(ARGV[1])").Numkeys(0).Arg(msg).Build()).Error()
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, Final},
		{"BUSY", reply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), Pause},
		{"OOM", reply("OOM command not allowed when used memory > 'maxmemory'."), Pause},
		{"READONLY", reply("READONLY You can't write against a read only replica."), Pause},
		{"LOADING", reply("LOADING Redis is loading the dataset in memory"), Pause},
		{"MASTERDOWN", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), Pause},
		{"TRYAGAIN", reply("TRYAGAIN Multiple keys request during rehashing of slot"), Pause},
		{"CLUSTERDOWN", reply("CLUSTERDOWN The cluster is down"), Pause},
		{"NOREPLICAS", reply("NOREPLICAS Not enough good replicas to write."), Pause},
		{"MISCONF", reply("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk."), Pause},
		{"Redis 6 script READONLY", reply("ERR Error running script (call to f_1): @user_script:1: @user_script: 1: -READONLY You can't write against a read only replica."), Pause},
		{"Redis 6 script WRONGTYPE", reply("ERR Error running script (call to f_1): @user_script:1: -WRONGTYPE Operation against a key holding the wrong kind of value"), Final},
		{"BUSYKEY", reply("BUSYKEY Target key name already exists."), Final},
		{"WRONGTYPE", reply("WRONGTYPE Operation against a key holding the wrong kind of value"), Final},
		{"NOPERM", reply("NOPERM this user has no permissions to run the 'evalsha' command"), Final},
		{"unknown command", reply("ERR unknown command 'evalsha'"), Final},
		{"script error", reply("ERR semaphore s holds \"x\", not a number of permits"), Final},
		{"ErrInvalid", fmt.Errorf("x: %w", lease.ErrInvalid), Final},
		{"ErrClosed", &lease.Error{Op: "acquire", Name: "n", Err: lease.ErrClosed}, Final},
		{"ErrRedis", fmt.Errorf("%w: WRONGTYPE", lease.ErrRedis), Final},
		{"ErrNotReplicated", fmt.Errorf("%w", lease.ErrNotReplicated), Final},
		{"ErrNotHeld", fmt.Errorf("%w: released", lease.ErrNotHeld), Final},
		{"ErrNotAcquired", fmt.Errorf("%w", lease.ErrNotAcquired), Unknown},
		{"ctx cancelled", rc.Do(cancelled, rc.B().Ping().Build()).Error(), Unknown},
		{"closed connection", closedErr(srv), Unknown},
	} {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("%s: Classify(%v) = %d, want %d", tt.name, tt.err, got, tt.want)
		}
		if got := Transient(tt.err); got != (tt.want != Final) {
			t.Errorf("%s: Transient(%v) = %v", tt.name, tt.err, got)
		}
	}
}

// closedErr is the error of a command on a closed rueidis client.
func closedErr(srv *redistest.Server) error {
	rc := srv.Client()
	rc.Close()
	return rc.Do(context.Background(), rc.B().Ping().Build()).Error()
}
