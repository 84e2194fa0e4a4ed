package script

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"strings"

	"github.com/redis/rueidis"
)

//go:embed lua/*.lua
var sources embed.FS

// Script is one Lua script: its source, its SHA1 and the rueidis script that
// runs it by SHA with EVAL as the fallback.
type Script struct {
	name string
	src  string
	sha  string
	lua  *rueidis.Lua
}

// load reads lua/NAME.lua. A missing file is a build defect, hence the panic
// at package initialisation rather than an error at run time.
func load(name string) *Script {
	b, err := sources.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("script: " + err.Error())
	}
	src := string(b)
	sum := sha1.Sum(b)
	return &Script{name: name, src: src, sha: hex.EncodeToString(sum[:]), lua: rueidis.NewLuaScript(src)}
}

// Name is the script's file name without the .lua suffix.
func (s *Script) Name() string { return s.name }

// Source is the script's Lua source.
func (s *Script) Source() string { return s.src }

// SHA is the hex SHA1 of the source, the name EVALSHA knows it by.
func (s *Script) SHA() string { return s.sha }

// Exec runs the script once: EVALSHA, then EVAL if the server does not have
// it yet.
func (s *Script) Exec(ctx context.Context, c rueidis.Client, keys, args []string) rueidis.RedisResult {
	return s.lua.Exec(ctx, c, keys, args)
}

// Evalsha builds an EVALSHA of the script, for callers that pipeline many
// runs in one DoMulti (the keeper's renewal round).
func (s *Script) Evalsha(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Evalsha().Sha1(s.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// Eval builds an EVAL of the script: the fallback for Evalsha.
func (s *Script) Eval(c rueidis.Client, keys, args []string) rueidis.Completed {
	return c.B().Eval().Script(s.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
}

// IsNoScript reports whether err is Redis' NOSCRIPT reply: the server has not
// loaded the script and an Eval is needed.
func IsNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.HasPrefix(e.Error(), "NOSCRIPT")
}
