package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// withPostgres runs f against the PostgreSQL at $DATABASE_URL or, when that
// is unset, against a server it starts from the machine's packages (Debian:
// apt-get install postgresql-15) in a temporary directory on a free loopback
// port, and stops after f returns. PostgreSQL refuses to run as root: as
// root, it runs the server as the user postgres.
func withPostgres(f func(dsn string) error) error {
	if dsn := os.Getenv("DATABASE_URL"); dsn != "" {
		return f(dsn)
	}
	bin, err := postgresBin()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "fencing-pg-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	attr := serverAttr() // the kernel kills the server when this process dies (Linux)
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setpgid = true
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root, and no user postgres to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr, initdb.Dir = attr, os.TempDir()
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port free a moment ago
	if err != nil {
		return err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	logPath := filepath.Join(dir, "postgres.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	srv := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", port, "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	srv.SysProcAttr, srv.Dir, srv.Stdout, srv.Stderr = attr, os.TempDir(), log, log
	if err := srv.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = srv.Wait(); close(exited) }()
	defer func() {
		// Immediate shutdown: the server ends its backends and frees its
		// shared memory; whatever is left 5s later is killed.
		_ = srv.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, _ := os.ReadFile(logPath)
		if strings.Contains(string(out), "database system is ready to accept connections") {
			break
		}
		select {
		case <-exited:
			return fmt.Errorf("postgres exited at start:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready in 30s:\n%s", out)
		}
	}
	fmt.Printf("started postgres on 127.0.0.1:%s\n", port)
	return f("postgres://postgres@127.0.0.1:" + port + "/postgres?sslmode=disable")
}

// postgresBin is the directory of initdb and postgres: $LEASEHOLD_POSTGRES_BIN,
// Debian's newest /usr/lib/postgresql/N/bin, or the one of postgres on PATH.
func postgresBin() (string, error) {
	if d := os.Getenv("LEASEHOLD_POSTGRES_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	if len(dirs) > 0 {
		return dirs[0], nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("no DATABASE_URL, and no PostgreSQL to start (apt-get install postgresql-15, or set LEASEHOLD_POSTGRES_BIN)")
}

// version is N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}
