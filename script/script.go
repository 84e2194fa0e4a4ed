package script

import (
	"bytes"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
)

//go:embed lua/*.lua lua/lib/*.lua
var sources embed.FS

// includeMarker, at the start of a line of a script, names a helper that
// compose splices in: the line "--!include NAME" becomes lua/lib/NAME.lua.
// Lua in Redis has no require, so helpers shared by several scripts (the fair
// lock's prune and tell_head) are written once and copied in here, at package
// initialisation, rather than by hand into each script. A helper that is
// code inline rather than functions takes arguments: "--!include NAME A B"
// splices it with $1 replaced by A and $2 by B (lib/token_fast.lua is the
// common case of a fencing token's draw, run where each script has the
// counter's key and the lease).
const includeMarker = "--!include "

// param is a helper's parameter, $1 to $9.
var param = regexp.MustCompile(`\$[1-9]`)

// Script is one Lua script as Redis runs it. Its source's header names its
// KEYS, its ARGV and its replies.
type Script struct {
	Name   string // the file name without .lua: "lock_acquire"
	Source string // the source, with its includes spliced in
	SHA    string // the hex SHA1 of Source, the name EVALSHA knows it by
}

// scripts is every script, in name order, loaded at package initialisation.
var scripts = load(sources)

// All returns every script in a new slice, in name order: for a tool that
// loads them ahead of time (SCRIPT LOAD) or lists them.
func All() []Script { return slices.Clone(scripts) }

// load composes every lua/NAME.lua of fsys. A missing include is a build
// defect, hence the panic at package initialisation rather than an error at
// run time.
func load(fsys fs.FS) []Script {
	files, err := fs.Glob(fsys, "lua/*.lua")
	if err != nil {
		panic("script: " + err.Error())
	}
	all := make([]Script, 0, len(files))
	for _, f := range files { // fs.Glob returns them sorted
		name := strings.TrimSuffix(strings.TrimPrefix(f, "lua/"), ".lua")
		src := compose(fsys, name)
		sum := sha1.Sum([]byte(src))
		all = append(all, Script{Name: name, Source: src, SHA: hex.EncodeToString(sum[:])})
	}
	return all
}

// compose returns the source of lua/NAME.lua in fsys with each include line
// replaced by the helper it names, its arguments in place of its parameters.
// A missing file, an unknown helper, a helper included twice, a parameter
// left without its argument, any other line that starts with "--!", and a
// helper that holds such a line itself (helpers include nothing) all panic.
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
		rest, ok := strings.CutPrefix(directive, includeMarker)
		args := strings.Fields(rest)
		if !ok || len(args) == 0 {
			panic(fmt.Sprintf("script: %s: %q is not %sNAME", file, directive, includeMarker))
		}
		lib, args := args[0], args[1:]
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
		for i, a := range args {
			body = bytes.ReplaceAll(body, []byte(fmt.Sprintf("$%d", i+1)), []byte(a))
		}
		if p := param.Find(body); p != nil {
			panic(fmt.Sprintf("script: %s: %q: no argument for %s", file, directive, p))
		}
		b.Write(body)
		if !bytes.HasSuffix(body, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.String()
}
