// Command leasehold inspects and repairs the locks that leasehold (and
// Redisson, which lays them out the same way) keeps in Redis.
//
// Usage:
//
//	leasehold [connection flags] COMMAND [flags] ARG
//
// The commands:
//
//	inspect NAME    the lock NAME: its kind (rlock, fair, rw), holders and
//	                hold counts, TTL, fencing token, the fair queue's waiters
//	                with how long each keeps its place, the read holds; or
//	                the semaphore NAME: total, available, each permit held
//	                with its expiry, the waiters for several permits
//	watch NAME      inspect NAME, redrawn as it changes, until interrupted;
//	                -interval sets how often it looks (default 500ms)
//	release NAME    force-release NAME whoever holds it, waking its waiters;
//	                asks first unless --yes is given
//	list PATTERN    the locks whose names match PATTERN (a Redis glob), found
//	                with SCAN, never KEYS, so a large keyspace is not blocked
//	version         the version of leasehold the command was built from, as
//	                -version does: vX.Y.Z when installed with go install
//	                ...@vX.Y.Z, (devel) when built in the repository
//
// inspect, list and watch take -json (or -o json) to print JSON for
// programs: one object per lock, on one line, with the same fields for all
// three (inspect prints one, list one per lock, watch one per change):
//
//	{"name":"jobs","kind":"fair","redis_type":"hash","mode":null,"ttl_ms":28989,
//	 "token":1795432339430876,"holders":[{"owner":"4eb5…:2","count":1,"write":false,
//	 "reads_ttl_ms":null}],"waiters":[{"owner":"fc42…:1","ttl_ms":3990}],
//	 "waiting_writers":[],"time":"2026-11-23T10:15:02.123Z"}
//
// kind is free, rlock, fair, rw, semaphore or not_a_lock; ttl_ms is null
// when the lock is not held (or is a semaphore) and -1 when it never
// expires; reads_ttl_ms lists a read-write lock's read holds of an owner; a
// waiter's ttl_ms is how long it keeps its place (null: no deadline);
// semaphore is a semaphore's {"total", "available", "holders", "permits":
// [{"id", "ttl_ms"}], "claims"}. Fields are never left out: null means "does
// not apply".
//
// The connection flags, accepted before or after the command:
//
//	-addr host:port      Redis (default $REDIS_ADDR, else 127.0.0.1:6379);
//	                     several, comma-separated, for a cluster
//	-user NAME           ACL user name
//	-password SECRET     password (default $REDIS_PASSWORD)
//	-db N                database number
//	-tls                 connect with TLS
//	-tls-ca FILE         PEM CA certificates to verify the server with
//	-tls-cert FILE       PEM client certificate, with -tls-key FILE
//	-tls-server-name S   server name to verify, if not the address's host
//	-tls-insecure        do not verify the server's certificate
//
// Kinds are told apart by what Redis holds: a hash with a mode field is a
// read-write lock; a hash whose lock has a queue (redisson_lock_queue:{NAME})
// or waiter deadlines is a fair lock; any other hash of owner -> hold count
// is a reentrant lock. A fair lock nobody waits for is laid out exactly as a
// reentrant lock, and is shown as one. A string holding an integer is a
// semaphore's count of permits available (list finds semaphores by their set
// of permits held, {NAME}:timeout); release leaves semaphores alone.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasehold:", err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `usage: leasehold [connection flags] COMMAND [flags] ARG

commands:
  inspect NAME    show the lock NAME: kind, holders, TTL, token, waiters, read holds
  watch NAME      show the lock NAME, redrawn as it changes, until interrupted
  release NAME    force-release the lock NAME (asks first unless --yes)
  list PATTERN    list the locks whose names match PATTERN (SCAN, never KEYS)
  version         print the version of leasehold (also -version)

inspect, list and watch print JSON with -json (or -o json), one object per line.
Run 'leasehold COMMAND -h' for the flags of a command.
`

// run runs the command line args (without the program name), reading answers
// from stdin and writing to stdout and stderr. It returns when the command is
// done, or, for watch, when ctx ends.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	conn := newConnFlags()
	top := newFlagSet("leasehold", stderr, conn)
	top.Usage = func() { fmt.Fprint(stderr, usage) }
	showVersion := top.Bool("version", false, "print the version of leasehold")
	if err := top.Parse(args); err != nil {
		return flagErr(err)
	}
	if *showVersion {
		return printVersion(stdout)
	}
	if top.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command")
	}
	name, rest := top.Arg(0), top.Args()[1:]
	if name == "version" {
		// Reaches no Redis: it must work where none is configured.
		if len(rest) > 0 {
			return usagef("version takes no arguments")
		}
		return printVersion(stdout)
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", name)
	}
	fs := newFlagSet("leasehold "+name, stderr, conn)
	runCmd := cmd.setup(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: leasehold %s [flags] %s\n\n%s\n\nflags:\n", name, cmd.arg, cmd.help)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, rest)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		fs.Usage()
		return usagef("%s takes one %s", name, cmd.arg)
	}
	rc, err := conn.dial()
	if err != nil {
		return err
	}
	defer rc.Close()
	return runCmd(ctx, env{rc: rc, stdin: stdin, stdout: stdout}, pos[0])
}

// flagErr turns the flag package's errors into usage errors; -h is not one.
func flagErr(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return usageError{err.Error()}
}
