package script

import (
	"bytes"
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/redis/rueidis"
)

//go:embed lua/*.lua lua/lib/*.lua
var sources embed.FS

// includeMarker, at the start of a line of a script, names a helper that
// load splices in: the line "--!include NAME" becomes lua/lib/NAME.lua.
// Lua in Redis has no require, so helpers shared by several scripts (the fair
// lock's prune and tell_head) are written once and copied in here, at package
// initialisation, rather than by hand into each script.
const includeMarker = "--!include "

// Script is one Lua script: its source, its SHA1 and the rueidis script that
// runs it by SHA with EVAL as the fallback.
type Script struct {
	name string
	src  string
	sha  string
	lua  *rueidis.Lua
}

// load reads lua/NAME.lua and splices in the helpers it includes. A missing
// file or include is a build defect, hence the panic at package
// initialisation rather than an error at run time.
func load(name string) *Script {
	src := compose(sources, name)
	sum := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, sha: hex.EncodeToString(sum[:]), lua: rueidis.NewLuaScript(src)}
}

// compose returns the source of lua/NAME.lua in fsys with each include line
// replaced by the helper it names. A missing file, an unknown helper, a helper
// included twice, any other line that starts with "--!", and a helper that
// holds such a line itself (helpers include nothing) all panic.
func compose(fsys fs.FS, name string) string {
	file := "lua/" + name + ".lua"
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		panic("script: " + err.Error())
	}
	var b strings.Builder
	included := make(map[string]bool)
	for line := range strings.SplitAfterSeq(string(src), "\n") {
		if !strings.HasPrefix(line, "--!") {
			b.WriteString(line)
			continue
		}
		directive := strings.TrimRight(line, "\r\n")
		lib, ok := strings.CutPrefix(directive, includeMarker)
		if !ok || lib == "" {
			panic(fmt.Sprintf("script: %s: %q is not %sNAME", file, directive, includeMarker))
		}
		if included[lib] {
			panic(fmt.Sprintf("script: %s: %q: included twice", file, directive))
		}
		included[lib] = true
		body, err := fs.ReadFile(fsys, "lua/lib/"+lib+".lua")
		if err != nil {
			panic(fmt.Sprintf("script: %s: %q: %v", file, directive, err))
		}
		if bytes.HasPrefix(body, []byte("--!")) || bytes.Contains(body, []byte("\n--!")) {
			panic(fmt.Sprintf("script: %s: %q: a helper includes nothing", file, directive))
		}
		b.Write(body)
		if !bytes.HasSuffix(body, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Name is the script's file name without the .lua suffix.
func (s *Script) Name() string { return s.name }

// Source is the script's Lua source, with its includes spliced in.
func (s *Script) Source() string { return s.src }

// SHA is the hex SHA1 of Source, the name EVALSHA knows it by.
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
