package lua

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/script"
)

// redissonFencedLock is RedissonFencedLock's acquire script (its
// tryLockInnerAsync): the lock as RLock's, and the token an INCR of
// redisson_lock_token:{NAME}, which it never expires.
const redissonFencedLock = "if (redis.call('exists', KEYS[1]) == 0 " +
	"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
	"local token = redis.call('incr', KEYS[2]);" +
	"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
	"redis.call('pexpire', KEYS[1], ARGV[1]); " +
	"return {-1, token}; " +
	"end; " +
	"return {redis.call('pttl', KEYS[1]), -1};"

// Leasehold and Redisson's RFencedLock draw from one counter, in turn, and
// every token is above the one before: a counter Redisson started (small)
// gives way to the clock, Redisson INCRs what leasehold drew, and each
// leasehold draw renews the counter's TTL, so that it lives while the lock
// is used and a Redisson INCR between two draws never starts it again from 1.
func TestTokensWithRedissonFencedLock(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const name, lease = "fenced", 2 * time.Second
	k := script.KeysOf(name)
	l := NewLock(name, Config{Lease: lease, Latch: time.Minute})
	java := func() uint64 {
		t.Helper()
		v, err := srv.Do("EVAL", redissonFencedLock, "2", name, k.Token, "30000", redistest.JavaOwner).AsIntSlice()
		if err != nil || len(v) != 2 || v[0] != -1 {
			t.Fatalf("Redisson's fenced lock: %v, %v", v, err)
		}
		srv.Do("DEL", name)
		return uint64(v[1])
	}
	ours := func() uint64 {
		t.Helper()
		g, err := l.Try(ctx, c, "client:1", false)
		if err != nil || !g.Acquired {
			t.Fatalf("Try: %+v, %v", g, err)
		}
		if _, err := l.Release(ctx, c, "client:1", "r", true, 0); err != nil {
			t.Fatal(err)
		}
		return g.Token
	}
	var tokens []uint64
	tokens = append(tokens, java(), ours(), java(), ours())
	// Past half the lease: the next draw renews the counter to a full lease.
	time.Sleep(lease * 3 / 4)
	tokens = append(tokens, ours())
	pttl, _ := srv.Do("PTTL", k.Token).AsInt64()
	time.Sleep(lease / 2)
	tokens = append(tokens, java())
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens %v: token %d did not rise", tokens, i)
		}
	}
	if tokens[1] < 1e15 {
		t.Errorf("tokens %v: the draw after Redisson's first is %d, not from the clock", tokens, tokens[1])
	}
	if pttl <= lease.Milliseconds()*3/4 || pttl > lease.Milliseconds() {
		t.Errorf("counter PTTL %dms after a draw on a live counter, want about the %v lease", pttl, lease)
	}
	if v, _ := srv.Do("GET", k.Token).ToString(); v != strconv.FormatUint(tokens[len(tokens)-1], 10) {
		t.Errorf("counter %s, want the last token %d", v, tokens[len(tokens)-1])
	}
}

// An acquire's reply is read as Redis sends it: lock_acquire's token alone,
// an integer of at least 10^15, is the lock taken with a hold count of 1;
// another integer is no reply of an acquire script, and an error.
func TestParseGrantReplies(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		reply string // the Lua expression the script returns
		want  Grant
		err   bool
	}{
		{"1795867301656941", Grant{Acquired: true, Token: 1795867301656941, Count: 1}, false},
		{"'1 1795867301656941 3'", Grant{Acquired: true, Token: 1795867301656941, Count: 3}, false},
		{"'1 9223372036854775807 1'", Grant{Acquired: true, Token: 9223372036854775807, Count: 1}, false},
		{"'0 2500'", Grant{Wait: 2500 * time.Millisecond}, false},
		{"1", Grant{}, true},
		{"-1", Grant{}, true},
		{"999999999999999", Grant{}, true},
	} {
		g, err := ParseGrant(c.Do(ctx, c.B().Eval().Script("return "+tt.reply).Numkeys(0).Build()))
		if (err != nil) != tt.err || g != tt.want {
			t.Errorf("reply %s: %+v, %v; want %+v, error %v", tt.reply, g, err, tt.want, tt.err)
		}
	}
}
