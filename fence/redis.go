package fence

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

//go:embed lua/fence_write.lua
var writeSource string

// writeScript runs every fenced write: rueidis runs it by SHA and falls back
// to EVAL when the server does not know it.
var writeScript = rueidis.NewLuaScript(writeSource)

// Redis fences writes to the keys of one Redis (which need not be the lock's).
// The last token applied to KEY is a string in KEY's Redis Cluster slot,
// leasehold_fence:{KEY} (docs/fencing.md has the layout), that expires no
// sooner than KEY: never while KEY has no expiry, or after a fenced write
// deleted it. A Redis is safe for concurrent use.
type Redis struct {
	rc rueidis.Client
}

// NewRedis fences writes made through rc. A nil rc makes every call fail with
// an error wrapping lease.ErrInvalid. On the Redis of a leasehold Client's
// locks, its Fence method needs no rc.
func NewRedis(rc rueidis.Client) *Redis { return &Redis{rc: rc} }

// Set sets key to value if token is not lower than the last token applied to
// key, as Do(ctx, key, token, "SET", value) does. A refused Set returns an
// error wrapping ErrStale and changes nothing.
func (r *Redis) Set(ctx context.Context, key, value string, token uint64) error {
	_, err := r.write(ctx, "set", key, token, "SET", value)
	return err
}

// Do runs the write command cmd key args... (key is its only key, e.g.
// "HSET", "INCRBY", "DEL", "SET" with "PX") if token is not lower than the
// last token applied to key, records token, and returns the command's reply.
// The check, the command and the record are one script: atomic. A refused
// Do returns an error wrapping ErrStale and changes nothing; so does a
// command Redis rejects, with an error wrapping lease.ErrRedis that gives
// the command and Redis' reason: fence: do "k": Redis refused FOO: unknown
// command.
func (r *Redis) Do(ctx context.Context, key string, token uint64, cmd string, args ...string) (rueidis.RedisMessage, error) {
	return r.write(ctx, "do", key, token, cmd, args...)
}

func (r *Redis) write(ctx context.Context, op, key string, token uint64, cmd string, args ...string) (rueidis.RedisMessage, error) {
	switch {
	case r == nil || r.rc == nil:
		return rueidis.RedisMessage{}, invalid(op, key, "nil rueidis.Client")
	case key == "":
		return rueidis.RedisMessage{}, invalid(op, key, "empty key")
	case cmd == "":
		return rueidis.RedisMessage{}, invalid(op, key, "empty command")
	}
	if err := checkToken(op, key, token); err != nil {
		return rueidis.RedisMessage{}, err
	}
	argv := make([]string, 0, 2+len(args))
	argv = append(argv, strconv.FormatUint(token, 10), cmd)
	argv = append(argv, args...)
	record := recordKey(key)
	reply, err := writeScript.Exec(ctx, r.rc, []string{key, record}, argv).ToArray()
	if err != nil {
		if re, ok := rueidis.IsRedisErr(err); ok {
			// The script never ran: an ACL, a busy or loading server.
			err = refused(re, "Redis refused EVALSHA of the fenced write, on %q and its token record %q: %s",
				key, record, reason(re.Error()))
		}
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: err}
	}
	status := int64(-3) // no status: a reply the script never makes
	if len(reply) > 0 {
		status, _ = reply[0].AsInt64()
	}
	switch {
	case status == 1 && len(reply) == 2:
		return reply[1], nil
	case status == 0 && len(reply) == 2:
		last, _ := reply[1].ToString()
		if n, err := strconv.ParseUint(last, 10, 64); err == nil {
			return rueidis.RedisMessage{}, stale(op, key, token, n)
		}
	case status == -1 && len(reply) == 3:
		step, _ := reply[1].ToString()
		why, _ := reply[2].ToString()
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: stepRefused(step, why, command(cmd), key, record)}
	case status == -2 && len(reply) == 2:
		last, _ := reply[1].ToString()
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key,
			Err: fmt.Errorf("the token record %q holds %q, not a token; nothing written", record, last)}
	}
	return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: fmt.Errorf("the fenced write's script replied in a form it never makes (%d values)", len(reply))}
}

// stepRefused is the error of a fenced write whose step (as fence_write.lua
// names it) Redis refused with the reply why.
func stepRefused(step, why, cmd, key, record string) error {
	why = reason(why)
	switch step {
	case "get":
		return refused(nil, "Redis refused GET of the token record %q: %s; nothing written", record, why)
	case "command":
		return refused(nil, "Redis refused %s: %s", cmd, why)
	case "set":
		return refused(nil, "%s applied, but Redis refused SET of the token record %q: %s; the token is not recorded", cmd, record, why)
	}
	// pttl, pexpire: the token is recorded, with no expiry.
	what := strings.ToUpper(step) + " of " + strconv.Quote(key)
	if step == "pexpire" {
		what = "PEXPIRE of the token record " + strconv.Quote(record)
	}
	return refused(nil, "%s applied and its token recorded, but Redis refused %s: %s; the record keeps no expiry", cmd, what, why)
}

// command is cmd as an error names it: upper case, quoted if it is not one
// word of printable ASCII.
func command(cmd string) string {
	for _, r := range cmd {
		if r <= ' ' || r > '~' {
			return strconv.Quote(cmd)
		}
	}
	return strings.ToUpper(cmd)
}
