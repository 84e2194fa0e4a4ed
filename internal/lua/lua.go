package lua

import (
	"context"
	"strings"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/script"
)

// runners holds the one rueidis.Lua of each script in script.All, built at
// package initialisation: rueidis hashes the source when it makes one, so a
// run builds nothing, and the map is only read afterwards (no lock).
var runners = func() map[*script.Script]*rueidis.Lua {
	all := script.All()
	m := make(map[*script.Script]*rueidis.Lua, 2*len(all))
	for _, s := range all {
		m[s] = rueidis.NewLuaScript(s.Source())
		m[s.Sharded()] = rueidis.NewLuaScript(s.Sharded().Source())
	}
	return m
}()

// Sharded is a rueidis client of a Redis Cluster whose nodes take sharded
// pub/sub (Redis 7+): the scripts run on it publish with SPUBLISH (their
// Sharded form). The Client core hands it to the lock kinds in place of the
// bare client.
type Sharded struct{ rueidis.Client }

// Exec runs the script s once: EVALSHA, then EVAL if the server does not have
// it yet. On a Sharded client it runs s's sharded form.
func Exec(ctx context.Context, c rueidis.Client, s *script.Script, keys, args []string) rueidis.RedisResult {
	if _, ok := c.(Sharded); ok {
		s = s.Sharded()
	}
	l, ok := runners[s]
	if !ok {
		// script.All lists every script (its test checks it against the
		// .lua files); were one left out, it would still run, hashed anew.
		l = rueidis.NewLuaScript(s.Source())
	}
	return l.Exec(ctx, c, keys, args)
}

// Evalsha builds an EVALSHA of the script s, for callers that pipeline many
// runs in one DoMulti (the keeper's renewal round).
func Evalsha(c rueidis.CoreClient, s *script.Script, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(s.SHA()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// Eval builds an EVAL of the script s: the fallback for Evalsha.
func Eval(c rueidis.CoreClient, s *script.Script, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.Source()).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// IsNoScript reports whether err is Redis' NOSCRIPT reply: the server has not
// loaded the script and an Eval is needed.
func IsNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "NOSCRIPT")
}
