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
//	                hold counts with each holder's connection, TTL, fencing
//	                token, the fair queue's waiters with how long each keeps
//	                its place, the read holds; or the semaphore NAME: total,
//	                available, each permit held with its expiry and its
//	                holder's connection, the waiters for several permits;
//	                a lock released sooner than its hold-at-least shows as
//	                released, kept until when, by whose release; fence's
//	                record of a key, its last token applied. A NAME with no
//	                lock names the locks whose keys end with it after a
//	                prefix, and the -prefix that reads them
//	watch NAME      inspect NAME, redrawn as it changes, until interrupted;
//	                -interval sets how often it looks (default 500ms)
//	release NAME    force-release NAME whoever holds it, waking its waiters;
//	                asks first unless --yes is given, and exits 1 having
//	                released nothing unless the answer is y
//	group NAME      the partition group NAME (package partition): its
//	                members, and each partition's owner, state (running,
//	                moving, free), token and since when it is held, read
//	                from the token
//	list [PATTERN]  the locks whose names match PATTERN (a Redis glob,
//	                default *), found with SCAN, never KEYS; WAITERS is a
//	                fair lock's queue, a semaphore's waiters for several
//	                permits, and for an rlock, election or rw the Clients
//	                waiting ("2 clients": the connections subscribed to its
//	                channel, one per Client however many goroutines wait)
//	version         the version of leasehold the command was built from, as
//	                -version does: vX.Y.Z when installed with go install
//	                ...@vX.Y.Z, (devel) when built in the repository
//	help [COMMAND]  the usage, or a command's flags, as -h does
//
// A holder's connection is found in CLIENT LIST: a Client made by
// leasehold.Open names its connections NAME/ID, ID being the Client's ID, with
// which every owner field it writes starts (see leasehold.WithClientName).
// Holders whose Client is not connected so named show none.
//
// inspect, list and watch take -json (or -o json), before or after the
// command, to print JSON for programs: one object per lock, on one line,
// with the same fields for all three (inspect prints one, list one per lock,
// watch one per change); group takes it too, and prints one object for the
// group. docs/operator.md describes the fields.
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
//	-prefix PREFIX       the key prefix of the service's Client
//	                     (leasehold.WithKeyPrefix): put before each NAME
//	                     and PATTERN, left out of the names shown
//
// Kinds are told apart by what Redis holds: a hash with a mode field is a
// read-write lock; a hash whose lock has a queue (redisson_lock_queue:{NAME})
// or waiter deadlines is a fair lock; any other hash of owner -> hold count
// is a reentrant lock; its one field leasehold:kept (-> the owner that
// released it) makes it a lock kept after a release (leasehold.WithHoldAtLeast).
// A fair lock nobody waits for is laid out exactly as a
// reentrant lock, and is shown as one. A string holding an integer is a
// semaphore's count of permits available when Redis keeps more of the
// semaphore: permits held ({NAME}:timeout; list finds semaphores by it),
// waiters for several (leasehold_semaphore_claims:{NAME}) or Clients
// subscribed to its channel (redisson_sc:{NAME}); with none of them it is
// either a counter or a semaphore nobody uses, and is shown so. A string
// holding a token at leasehold_fence:{KEY} (package fence's layout) is
// fence's record of the last token applied to KEY. release leaves all three
// alone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leasehold:", err)
		if errors.As(err, new(usageError)) {
			fmt.Fprintln(os.Stderr, "Run 'leasehold help' for usage.")
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
  inspect NAME      show the lock NAME: kind, holders and their connections,
                    TTL, token, waiters, read holds
  watch NAME        show the lock NAME, redrawn as it changes, until interrupted
  release NAME      force-release the lock NAME (asks first unless --yes)
  group NAME        show the partition group NAME: its members, and each
                    partition's owner, state, token and since when it is held
  list [PATTERN]    list the locks matching PATTERN, default * (SCAN, never KEYS)
  version           print the version of leasehold (also -version)
  help [COMMAND]    print this, or the flags of COMMAND (also -h)

inspect, list, watch and group print JSON with -json (or -o json), one
object per line. Flags may come before or after the command. -prefix PREFIX reads the
locks of a Client opened with leasehold.WithKeyPrefix(PREFIX) by their names;
inspect, list and release name the -prefix of the locks they find under
another prefix when the name given has none.
`

// run runs the command line args (without the program name), reading answers
// from stdin and writing to stdout; it returns its errors, for main to print.
// It returns when the command is done, or, for watch, when ctx ends.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	conn := newConnFlags()
	var asJSON bool
	top := newFlagSet("leasehold", conn)
	jsonFlag(top, &asJSON)
	showVersion := top.Bool("version", false, "print the version of leasehold")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, err := fmt.Fprint(stdout, usage)
			return err
		}
		return usageError{err.Error()}
	}
	if *showVersion {
		return printVersion(stdout)
	}
	if top.NArg() == 0 {
		return usagef("no command")
	}
	name, rest := top.Arg(0), top.Args()[1:]
	switch name {
	case "version":
		// Reaches no Redis: it must work where none is configured.
		if len(rest) > 0 {
			return usagef("version takes no arguments")
		}
		return printVersion(stdout)
	case "help":
		return help(stdout, conn, rest)
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q", name)
	}
	fs := newFlagSet("leasehold "+name, conn)
	runCmd := cmd.setup(fs, &asJSON)
	pos, err := parseInterleaved(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		return commandUsage(stdout, name, cmd, fs)
	}
	if err != nil {
		return usageError{fmt.Sprintf("%s: %v", name, err)}
	}
	if len(pos) == 0 && cmd.def != "" {
		pos = []string{cmd.def}
	}
	if len(pos) != 1 {
		return usagef("%s takes one %s", name, strings.Trim(cmd.arg, "[]"))
	}
	if asJSON && !cmd.json {
		return usagef("-json goes with inspect, list, watch and group; %s prints text", name)
	}
	if i := strings.IndexAny(conn.prefix, "{}*?[]\\"); i >= 0 {
		// As leasehold.WithKeyPrefix refuses them.
		return usagef("-prefix %q holds %q, which no leasehold Client's key prefix holds", conn.prefix, conn.prefix[i:i+1])
	}
	rc, err := conn.dial()
	if err != nil {
		return err
	}
	defer rc.Close()
	return runCmd(ctx, env{prefix: conn.prefix, rc: rc, clients: newClients(rc), stdin: stdin, stdout: stdout}, pos[0])
}

// help writes the usage, or with a command's name the command's, to w.
func help(w io.Writer, conn *connFlags, args []string) error {
	switch {
	case len(args) == 0:
		_, err := fmt.Fprint(w, usage)
		return err
	case len(args) > 1:
		return usagef("help takes one COMMAND")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if args[0] == "version" || args[0] == "help" {
			_, err := fmt.Fprint(w, usage)
			return err
		}
		return usagef("unknown command %q", args[0])
	}
	fs := newFlagSet("leasehold "+args[0], conn)
	cmd.setup(fs, new(bool))
	return commandUsage(w, args[0], cmd, fs)
}

// commandUsage writes the usage of the command name, with its flags, to w.
func commandUsage(w io.Writer, name string, cmd command, fs *flag.FlagSet) error {
	fmt.Fprintf(w, "usage: leasehold %s [flags] %s\n\n%s\n\nflags:\n", name, cmd.arg, cmd.help)
	fs.SetOutput(w)
	fs.PrintDefaults()
	return nil
}
