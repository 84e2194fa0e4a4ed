package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// publishCall and spublishCall are how every script publishes, and how its
// sharded form does: the same arguments, the channel then the message. A
// script publishes after its writes, so it calls PUBLISH with redis.pcall: a
// PUBLISH that an ACL refuses must not turn a change Redis has applied into
// an error, which would tell the caller nothing changed. A message is only a
// hint: waiters also wake on the key's invalidation or the lease's TTL.
const (
	publishCall  = "redis.pcall('publish', "
	spublishCall = "redis.pcall('spublish', "
	// A script that counts a channel's subscribers (lock_handoff) counts
	// the sharded ones in its sharded form.
	numsubCall      = "redis.pcall('pubsub', 'numsub', "
	shardnumsubCall = "redis.pcall('pubsub', 'shardnumsub', "
)

// luaScript is one script of package script in the two forms leasehold runs:
// as written, and sharded, the form for Redis Cluster on Redis 7 and later,
// with every PUBLISH an SPUBLISH, so that a message reaches only the nodes of
// its channel's slot, where Redisson waiters (sharded subscriptions, its
// default there) subscribe. A script that publishes nothing is its own
// sharded form.
type luaScript struct {
	plain, sharded *form
}

// form is one form of a script, with the rueidis.Lua that runs it: rueidis
// hashes the source when it makes one, so a run builds nothing.
type form struct {
	name, src, sha string
	run            *rueidis.Lua
}

// scripts are package script's, read once.
var scripts = script.All()

// loaded is every script this package runs, by name: written only at
// package initialisation, then only read (no lock).
var loaded = map[string]*luaScript{}

// load returns the script name of package script in its two forms. A
// script that is not there is a build defect, hence the panic at package
// initialisation.
func load(name string) *luaScript {
	i := slices.IndexFunc(scripts, func(s script.Script) bool { return s.Name == name })
	if i < 0 {
		panic("lua: no script " + name)
	}
	s := scripts[i]
	ls := &luaScript{plain: newForm(name, s.Source, s.SHA)}
	ls.sharded = ls.plain
	if strings.Contains(s.Source, publishCall) {
		// The sharded form is this package's own: its SHA is computed here.
		src := strings.ReplaceAll(s.Source, publishCall, spublishCall)
		src = strings.ReplaceAll(src, numsubCall, shardnumsubCall)
		sum := sha1.Sum([]byte(src))
		ls.sharded = newForm(name, src, hex.EncodeToString(sum[:]))
	}
	loaded[name] = ls
	return ls
}

func newForm(name, src, sha string) *form {
	return &form{name: name, src: src, sha: sha, run: rueidis.NewLuaScript(src)}
}

// of is the script's form for a client that publishes sharded or not.
func (s *luaScript) of(sharded bool) *form {
	if sharded {
		return s.sharded
	}
	return s.plain
}

// Sharded is a rueidis client of a Redis Cluster whose nodes take sharded
// pub/sub (Redis 7+): the scripts run on it publish with SPUBLISH (their
// sharded form). The Client core hands it to the lock kinds in place of the
// bare client.
type Sharded struct{ rueidis.Client }

// exec runs the script once on c: EVALSHA, then EVAL if the server does not
// have it yet. On a Sharded client it runs the sharded form.
func (s *luaScript) exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	_, sharded := c.(Sharded)
	return s.of(sharded).run.Exec(ctx, c, keys, args)
}

// Call is one run of a script with its KEYS and ARGV, for callers that
// pipeline many in one DoMulti (the keeper's renewal round).
type Call struct {
	script     *luaScript
	Keys, Args []string
}

// Cmd builds the EVALSHA of the call, of the script's sharded form when
// sharded is set (a Client whose scripts publish with SPUBLISH).
func (c *Call) Cmd(cc rueidis.CoreClient, sharded bool) rueidis.Completed {
	return cc.B().Evalsha().Sha1(c.script.of(sharded).sha).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build()
}

// Eval builds the EVAL of the call: the fallback for Cmd after NOSCRIPT.
func (c *Call) Eval(cc rueidis.CoreClient, sharded bool) rueidis.Completed {
	return cc.B().Eval().Script(c.script.of(sharded).src).Numkeys(int64(len(c.Keys))).Key(c.Keys...).Arg(c.Args...).Build()
}

// IsNoScript reports whether err is Redis' NOSCRIPT reply: the server has not
// loaded the script and an Eval is needed.
func IsNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "NOSCRIPT")
}
