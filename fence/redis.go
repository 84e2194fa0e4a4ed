package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

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
// an error wrapping lease.ErrInvalid.
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
// command Redis rejects (its error is wrapped).
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
	reply, err := writeScript.Exec(ctx, r.rc, []string{key, recordKey(key)}, argv).ToArray()
	if err != nil {
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: err}
	}
	if len(reply) != 2 {
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: fmt.Errorf("fence: script replied %d values, want 2", len(reply))}
	}
	applied, err := reply[0].AsInt64()
	if err != nil {
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: err}
	}
	if applied == 1 {
		return reply[1], nil
	}
	last, err := reply[1].ToString()
	if err != nil {
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: errors.Join(ErrStale, err)}
	}
	n, err := strconv.ParseUint(last, 10, 64)
	if err != nil {
		return rueidis.RedisMessage{}, &Error{Op: op, Resource: key, Err: errors.Join(ErrStale, err)}
	}
	return rueidis.RedisMessage{}, stale(op, key, token, n)
}
