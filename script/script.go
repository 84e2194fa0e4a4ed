package script

import (
	"bytes"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed lua/*.lua lua/lib/*.lua
var sources embed.FS

// includeMarker, at the start of a line of a script, names a helper that
// load splices in: the line "--!include NAME" becomes lua/lib/NAME.lua.
// Lua in Redis has no require, so helpers shared by several scripts (the fair
// lock's prune and tell_head) are written once and copied in here, at package
// initialisation, rather than by hand into each script.
const includeMarker = "--!include "

// Script is one Lua script: its name, its source and the SHA1 that EVALSHA
// and SCRIPT LOAD know it by. The source's header names its KEYS, its ARGV
// and what it returns.
type Script struct {
	name    string
	src     string
	sha     string
	sharded *Script // the same script publishing with SPUBLISH; nil when it publishes nothing
}

// publishCall and spublishCall are how every script publishes, and how its
// sharded twin does: the same arguments, the channel then the message. A
// script publishes after its writes, so it calls PUBLISH with redis.pcall: a
// PUBLISH that an ACL refuses must not turn a change Redis has applied into
// an error, which would tell the caller nothing changed. A message is only a
// hint: waiters also wake on the key's invalidation or the lease's TTL.
const (
	publishCall  = "redis.pcall('publish', "
	spublishCall = "redis.pcall('spublish', "
)

// All returns every script of the package, in a new slice: for a tool that
// loads them ahead of time (SCRIPT LOAD) or lists them.
func All() []*Script {
	return []*Script{
		LockAcquire, LockRelease, LockRenew, LockForceRelease,
		FairAcquire, FairAbandon, FairRelease, FairForceRelease,
		RWReadAcquire, RWReadRelease, RWReadRenew,
		RWWriteAcquire, RWWriteRelease, RWWriteRenew, RWWriteAbandon,
		TokenRaise,
		SemaphoreAcquire, SemaphoreRelease, SemaphoreRenew, SemaphoreAbandon,
		SemaphoreSet, SemaphoreAdd, SemaphoreAvailable,
		ElectionCampaign, ElectionRelease, ElectionRenew, ElectionProclaim, ElectionLeader,
		Inspect,
	}
}

// load reads lua/NAME.lua and splices in the helpers it includes. A missing
// file or include is a build defect, hence the panic at package
// initialisation rather than an error at run time.
func load(name string) *Script {
	s := newScript(name, compose(sources, name))
	if strings.Contains(s.src, publishCall) {
		s.sharded = newScript(name, strings.ReplaceAll(s.src, publishCall, spublishCall))
	}
	return s
}

func newScript(name, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, sha: hex.EncodeToString(sum[:])}
}

// Sharded is the script as it runs in Redis Cluster on Redis 7 and later:
// the same source with every PUBLISH an SPUBLISH, so that a message reaches
// only the nodes of its channel's slot, where Redisson waiters (sharded
// subscriptions, its default there) subscribe. A script that publishes
// nothing is its own sharded form.
func (s *Script) Sharded() *Script {
	if s.sharded == nil {
		return s
	}
	return s.sharded
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
