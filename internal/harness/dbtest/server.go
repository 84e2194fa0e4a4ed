package dbtest

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/harness/missing"
)

// Server is one database server process, owned by a test (Start...) or a
// program (Launch...).
type Server struct {
	// Port is its loopback TCP port.
	Port int
	// DSN is what database/sql's driver for it opens: a pgx URL, or a
	// go-sql-driver/mysql DSN with the database "test".
	DSN string

	dir  string
	log  string
	quit syscall.Signal // asks the server to stop at once
	cmd  *exec.Cmd
	exit chan struct{}
	once sync.Once
}

// FindPostgres returns the directory of PostgreSQL's initdb and postgres,
// as examples/fencing looks for them: $LEASEHOLD_POSTGRES_BIN, Debian's
// newest /usr/lib/postgresql/N/bin, or that of postgres on PATH. A
// PostgreSQL not found is a *missing.Server.
func FindPostgres() (string, error) {
	var dirs []string
	if d := os.Getenv("LEASEHOLD_POSTGRES_BIN"); d != "" {
		dirs = []string{d}
	} else {
		dirs, _ = filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.SortFunc(dirs, func(a, b string) int { return cmp.Compare(pgVersion(b), pgVersion(a)) })
		if p, err := exec.LookPath("postgres"); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	err := errors.New("not in /usr/lib/postgresql/*/bin nor on PATH")
	for _, d := range dirs {
		if _, err = os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", &missing.Server{Name: "PostgreSQL", Err: err,
		Install: "bash .ci/databases, or apt-get install -y postgresql-15; or set LEASEHOLD_POSTGRES_BIN to the directory of initdb and postgres"}
}

// pgVersion is N of /usr/lib/postgresql/N/bin.
func pgVersion(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// StartPostgres runs a PostgreSQL server for tb, stopped when it ends. It
// skips tb when PostgreSQL is not installed (fails it under
// LEASEHOLD_REQUIRE_SERVERS=1; see package missing), and fails tb if the
// server does not start.
func StartPostgres(tb testing.TB) *Server {
	tb.Helper()
	s, err := LaunchPostgres()
	return started(tb, s, err)
}

// StartMariaDB runs a MariaDB server for tb, as StartPostgres does.
func StartMariaDB(tb testing.TB) *Server {
	tb.Helper()
	s, err := LaunchMariaDB()
	return started(tb, s, err)
}

// started takes a Launch's results for tb: the server, stopped when tb
// ends, or tb skipped or failed.
func started(tb testing.TB, s *Server, err error) *Server {
	tb.Helper()
	if err != nil {
		missing.SkipOrFail(tb, err)
		tb.Fatalf("dbtest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// LaunchPostgres runs a PostgreSQL server (trust authentication, user
// postgres, no fsync) for a program: the caller must Stop it. Its error is a
// *missing.Server when PostgreSQL is not installed.
func LaunchPostgres() (*Server, error) {
	bin, err := FindPostgres()
	if err != nil {
		return nil, err
	}
	s, cred, err := prepare("postgres", "leasehold-pg-")
	if err != nil {
		return nil, err
	}
	// Immediate shutdown: the postmaster ends its backends and removes its
	// shared memory, which a SIGKILL would leave behind.
	s.quit = syscall.SIGQUIT
	data := filepath.Join(s.dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if err := run(initdb, cred); err != nil {
		s.Stop()
		return nil, err
	}
	s.DSN = "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.Port) + "/postgres?sslmode=disable"
	err = s.start(cred, "database system is ready to accept connections", filepath.Join(bin, "postgres"),
		"-D", data, "-p", strconv.Itoa(s.Port), "-k", s.dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50")
	return s, err
}

// LaunchMariaDB runs a MariaDB server (no grant tables: any user, no
// password; database test) for a program: the caller must Stop it. Its
// error is a *missing.Server when MariaDB is not installed.
func LaunchMariaDB() (*Server, error) {
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		if mariadbd, err = exec.LookPath("/usr/sbin/mariadbd"); err != nil {
			return nil, &missing.Server{Name: "mariadbd", Install: "bash .ci/databases, or apt-get install -y mariadb-server",
				Err: errors.New("not on PATH nor in /usr/sbin")}
		}
	}
	s, cred, err := prepare("mysql", "leasehold-mariadb-")
	if err != nil {
		return nil, err
	}
	s.quit = syscall.SIGTERM
	data := filepath.Join(s.dir, "data")
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve")
	if err := run(install, cred); err != nil {
		s.Stop()
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(data, "test"), 0o755); err == nil && cred != nil {
		_ = os.Chown(filepath.Join(data, "test"), int(cred.Uid), int(cred.Gid))
	}
	s.DSN = "root@tcp(127.0.0.1:" + strconv.Itoa(s.Port) + ")/test"
	err = s.start(cred, "ready for connections", mariadbd, "--no-defaults", "--datadir="+data,
		"--port="+strconv.Itoa(s.Port), "--bind-address=127.0.0.1", "--socket="+filepath.Join(s.dir, "mysqld.sock"),
		"--pid-file="+filepath.Join(s.dir, "mysqld.pid"), "--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=0",
		"--innodb-doublewrite=0", "--max-connections=50")
	return s, err
}

// prepare makes the server's directory, owned by the user called name when
// this process is root (cred is then that user's), and picks a free port.
func prepare(name, pattern string) (*Server, *syscall.Credential, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, nil, err
	}
	s := &Server{dir: dir, log: filepath.Join(dir, "server.log")}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup(name)
		if err != nil {
			s.Stop()
			return nil, nil, fmt.Errorf("running as root, and no user %s to run the server as: %w", name, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.Stop()
			return nil, nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.Stop()
		return nil, nil, err
	}
	s.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return s, cred, nil
}

// run runs a setup command as cred, and returns its output with its error.
func run(cmd *exec.Cmd, cred *syscall.Credential) error {
	cmd.SysProcAttr = attr(cred)
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

// attr runs a process as cred, in a process group of its own (Stop kills the
// group), killed by the kernel if this process dies.
func attr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// start runs the server and waits up to 60s for ready in its log.
func (s *Server) start(cred *syscall.Credential, ready, bin string, args ...string) error {
	log, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.Stop()
		return err
	}
	defer log.Close()
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = attr(cred)
	s.cmd.Dir = os.TempDir()
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		s.Stop()
		return err
	}
	s.exit = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exit) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := os.ReadFile(s.log)
		if strings.Contains(string(out), ready) {
			return nil
		}
		select {
		case <-s.exit:
			s.Stop()
			return fmt.Errorf("%s exited at start:\n%s", filepath.Base(bin), out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("%s not ready in 60s:\n%s", filepath.Base(bin), out)
		}
	}
}

// Dir is the server's temporary directory: its data, socket and log.
func (s *Server) Dir() string { return s.dir }

// Log is what the server has written to its log so far.
func (s *Server) Log() string {
	out, _ := os.ReadFile(s.log)
	return string(out)
}

// Stop asks the server to stop, kills its process group if it has not
// within 10s, waits for it, and removes its directory. It may be called more
// than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.cmd != nil {
			_ = s.cmd.Process.Signal(s.quit)
			select {
			case <-s.exit:
			case <-time.After(10 * time.Second):
			}
			// Whatever is left of the group: backends, or all of it.
			err := syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				_ = s.cmd.Process.Kill()
			}
			<-s.exit
		}
		_ = os.RemoveAll(s.dir)
	})
}
