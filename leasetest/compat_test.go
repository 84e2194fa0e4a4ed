package leasetest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// The kit's scripts hook: a script's lone-number table.concat is a string,
// as on Redis; EVALSHA runs what EVAL or SCRIPT LOAD sent, under its own
// SHA1, and answers NOSCRIPT for anything else; errors keep their lines.
func TestScriptsHook(t *testing.T) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		t.Fatal(err)
	}
	setUp(mr)
	t.Cleanup(mr.Close)
	rc, err := rueidis.NewClient(clientOption(mr.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	ctx := context.Background()
	sha := func(src string) string {
		sum := sha1.Sum([]byte(src))
		return hex.EncodeToString(sum[:])
	}

	concat := "return table.concat({1}, ' ')"
	if err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha(concat)).Numkeys(0).Build()).Error(); err == nil ||
		!strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("EVALSHA of a script never sent: %v, want NOSCRIPT", err)
	}
	if got, err := rc.Do(ctx, rc.B().Eval().Script(concat).Numkeys(0).Build()).ToString(); got != "1" || err != nil {
		t.Fatalf("EVAL: %q, %v; want the string \"1\"", got, err)
	}
	if got, err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha(concat)).Numkeys(0).Build()).ToString(); got != "1" || err != nil {
		t.Fatalf("EVALSHA after EVAL: %q, %v; want the string \"1\"", got, err)
	}

	loaded := "return table.concat({KEYS[1], 2}, ' ')"
	if got, err := rc.Do(ctx, rc.B().ScriptLoad().Script(loaded).Build()).ToString(); got != sha(loaded) || err != nil {
		t.Fatalf("SCRIPT LOAD = %q, %v; want %s", got, err, sha(loaded))
	}
	if got, err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha(loaded)).Numkeys(1).Key("k").Build()).ToString(); got != "k 2" || err != nil {
		t.Fatalf("EVALSHA of a loaded script = %q, %v", got, err)
	}
	if err := rc.Do(ctx, rc.B().ScriptFlush().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().Evalsha().Sha1(sha(loaded)).Numkeys(0).Build()).Error(); err == nil {
		t.Fatal("EVALSHA after SCRIPT FLUSH ran")
	}

	err = rc.Do(ctx, rc.B().Eval().Script("local a = 1\nlocal b = 2\nerror('third line')").Numkeys(0).Build()).Error()
	if err == nil || !strings.Contains(err.Error(), ":3:") {
		t.Fatalf("error of line 3: %v", err)
	}
}
