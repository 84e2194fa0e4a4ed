package chaos

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// fenceScript is the guarded resource: a number that critical sections
// read and then write, one more than they read (a read-modify-write). Each
// access carries the section's fencing token and is taken only if the token
// is at least the highest taken so far; a taken access raises that mark, the
// read too, so that a holder that read before a later holder cannot write
// after it. Every access taken is logged, so that the order in which the
// resource took them can be replayed. It runs on a redis-server of its own,
// not the lock server: the resource must outlive the faults of the lock
// service.
//
// KEYS[1]  fence:NAME  the highest token taken
// KEYS[2]  log:NAME    list of accesses taken, "TOKEN|SECTION|PHASE|ISSUED|VALUE"
// KEYS[3]  value:NAME  the number
// ARGV[1] token  ARGV[2] section (Section.ID)  ARGV[3] phase, "enter" (read)
// or "exit" (write)  ARGV[4] issued (Mono)  ARGV[5] the value an exit writes
//
// Returns {1, value} when taken (the value read, or written), {0, 0} when
// refused.
var fenceScript = rueidis.NewLuaScript(`
local high = tonumber(redis.call('get', KEYS[1]) or '-1')
if tonumber(ARGV[1]) < high then
  return {0, 0}
end
local value = redis.call('get', KEYS[3]) or '0'
if ARGV[3] == 'exit' then
  value = ARGV[5]
  redis.call('set', KEYS[3], value)
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[2], ARGV[1] .. '|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. value)
return {1, tonumber(value)}
`)

// Resource is the fenced resource for one lock name.
type Resource struct {
	rc   rueidis.Client
	keys []string
}

// NewResource is the resource of lock name on the Redis rc reaches.
func NewResource(rc rueidis.Client, name string) *Resource {
	return &Resource{rc: rc, keys: []string{"fence:" + name, "log:" + name, "value:" + name}}
}

// Write tries an access of the critical section named section under token:
// phase "enter" reads the number, "exit" writes value. It reports whether
// the resource took it, and the value read or written.
func (r *Resource) Write(ctx context.Context, token uint64, section, phase string, value int64, issued Mono) (bool, int64, error) {
	vs, err := fenceScript.Exec(ctx, r.rc, r.keys, []string{
		strconv.FormatUint(token, 10), section, phase, strconv.FormatInt(int64(issued), 10), strconv.FormatInt(value, 10),
	}).AsIntSlice()
	if err != nil {
		return false, 0, err
	}
	if len(vs) != 2 {
		return false, 0, fmt.Errorf("chaos: fence replied %v", vs)
	}
	return vs[0] == 1, vs[1], nil
}

// Accepted is one write in the resource's log.
type Accepted struct {
	Token uint64
	// Holder is the section that wrote, Section.ID: PROCESS/gN#M.
	Holder string
	Phase  string
	Issued Mono
	// Value is the number read (enter) or written (exit).
	Value int64
}

// Log reads every accepted write, oldest first.
func (r *Resource) Log(ctx context.Context) ([]Accepted, error) {
	lines, err := r.rc.Do(ctx, r.rc.B().Lrange().Key(r.keys[1]).Start(0).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	return parseLog(lines)
}

// Len is the number of accepted writes so far.
func (r *Resource) Len(ctx context.Context) (int64, error) {
	return r.rc.Do(ctx, r.rc.B().Llen().Key(r.keys[1]).Build()).AsInt64()
}

// Since reads the accepted writes from index i on.
func (r *Resource) Since(ctx context.Context, i int64) ([]Accepted, error) {
	lines, err := r.rc.Do(ctx, r.rc.B().Lrange().Key(r.keys[1]).Start(i).Stop(-1).Build()).AsStrSlice()
	if err != nil {
		return nil, err
	}
	return parseLog(lines)
}

func parseLog(lines []string) ([]Accepted, error) {
	out := make([]Accepted, 0, len(lines))
	for _, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 5 {
			return nil, fmt.Errorf("chaos: bad log entry %q", l)
		}
		tok, err1 := strconv.ParseUint(f[0], 10, 64)
		iss, err2 := strconv.ParseInt(f[3], 10, 64)
		val, err3 := strconv.ParseInt(f[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("chaos: bad log entry %q", l)
		}
		out = append(out, Accepted{Token: tok, Holder: f[1], Phase: f[2], Issued: Mono(iss), Value: val})
	}
	return out, nil
}
