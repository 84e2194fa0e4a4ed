package fence

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/lease"
)

// ErrStale is wrapped by the error of a write that carries a token lower than
// one the resource has already applied: a newer holder has written.
var ErrStale = errors.New("fence: stale token")

// Error records a refused or failed fenced write, as os.PathError does for a
// file.
type Error struct {
	// Op is the operation: "create", "check", "set", "do", "admit".
	Op string
	// Resource is the resource: a Table row's resource (the table, for
	// "create"), a Redis key, a Gate's resource.
	Resource string
	// Err wraps ErrStale, lease.ErrInvalid, lease.ErrRedis (Redis refused
	// the write: its reply is in the message), ctx's error or the store's.
	Err error
}

// Error reads "fence: OP "RESOURCE": ERR".
func (e *Error) Error() string {
	return "fence: " + e.Op + " " + strconv.Quote(e.Resource) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// stale is the refusal of token where last was applied.
func stale(op, resource string, token, last uint64) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w %d: %d applied already", ErrStale, token, last)}
}

// invalid is a refusal of bad input.
func invalid(op, resource, why string) error {
	return &Error{Op: op, Resource: resource, Err: fmt.Errorf("%w: %s", lease.ErrInvalid, why)}
}

// refusal is Redis' refusal of a fenced write, in Redis' words: it wraps
// lease.ErrRedis, and reply, Redis' error, when the script's call got one.
type refusal struct {
	text  string
	reply error
}

func (e *refusal) Error() string { return e.text }

func (e *refusal) Unwrap() []error {
	if e.reply == nil {
		return []error{lease.ErrRedis}
	}
	return []error{lease.ErrRedis, e.reply}
}

// refused is a refusal reading format with args; reply is Redis' error
// reply, or nil when the script caught it.
func refused(reply error, format string, args ...any) error {
	return &refusal{text: fmt.Sprintf(format, args...), reply: reply}
}

// Redis' own errors for a command a script calls, which speak of the
// script: an unknown command, a wrong number of arguments, a command no
// script may run (as Redis 6.2 to 8 and Valkey word them), and the script's
// name and line, which Redis 6.2 puts first and Redis 7 last.
var (
	unknownCommand = regexp.MustCompile(`(?i)^unknown (redis |valkey )?command called from (lua )?script`)
	wrongArity     = regexp.MustCompile(`(?i)^wrong number of args calling (redis |valkey )?command from (lua )?script`)
	notInScript    = regexp.MustCompile(`(?i)^this (redis |valkey )?command is not allowed from scripts?`)
	scriptLine     = regexp.MustCompile(`^@user_script: ?\d+: ?`)
	scriptPlace    = regexp.MustCompile(` script: [0-9a-f]{40}, on @user_script:\d+\.$`)
)

// reason is Redis' error reply why as a fenced write's error gives it:
// without the script's name and line or the generic code ERR, and with an
// unknown command or a wrong number of arguments said as for any command
// (the caller wrote no script).
func reason(why string) string {
	why = scriptPlace.ReplaceAllString(scriptLine.ReplaceAllString(why, ""), "")
	why = strings.TrimPrefix(why, "ERR ")
	switch {
	case unknownCommand.MatchString(why):
		return "unknown command"
	case wrongArity.MatchString(why):
		return "wrong number of arguments"
	case notInScript.MatchString(why):
		return "not allowed in a script, and a fenced write runs as one"
	}
	return why
}

// checkToken refuses token 0 (a lease with no fencing token: a semaphore
// permit's) and tokens above math.MaxInt64, which no store here keeps as a
// signed 64-bit integer. leasehold's tokens are about the server's time in
// microseconds, far below that.
func checkToken(op, resource string, token uint64) error {
	switch {
	case token == 0:
		return invalid(op, resource, "token 0: the lease has no fencing token")
	case token > math.MaxInt64:
		return invalid(op, resource, "token "+strconv.FormatUint(token, 10)+" above 2^63-1")
	}
	return nil
}
