package leaseholdotel_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// redisAddr is the redis-server every test and example of the package runs
// against, started by TestMain. Tests use lock names of their own.
var redisAddr string

// The module starts its redis-server itself, as the main module's harness
// does (a module nested under its path could import that harness, as the
// fault suite does; this one keeps to public packages). The server runs
// inside the goleak check: it leaves no goroutine behind once stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(withRedis{m})
}

// withRedis runs the tests with a redis-server up, and stops it before
// goleak looks for leftover goroutines.
type withRedis struct{ m *testing.M }

func (w withRedis) Run() int {
	srv, err := startRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "leaseholdotel tests:", err)
		return 1
	}
	defer srv.stop()
	redisAddr = srv.addr
	return w.m.Run()
}

// redisServer is a redis-server process on a loopback port.
type redisServer struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	log  *os.File
	exit chan struct{} // closed once the process has been waited for
}

// redisBinary is the redis-server to run: $LEASEHOLD_REDIS_SERVER, as for
// the main module's tests, or redis-server on the PATH.
func redisBinary() string {
	if b := os.Getenv("LEASEHOLD_REDIS_SERVER"); b != "" {
		return b
	}
	return "redis-server"
}

// startRedis runs a redis-server without persistence on a free loopback
// port; a port taken between finding it free and binding it is retried.
func startRedis() (*redisServer, error) {
	if _, err := exec.LookPath(redisBinary()); err != nil {
		return nil, fmt.Errorf("%s not found (apt-get install -y redis-server): %w", redisBinary(), err)
	}
	var err error
	for range 5 {
		var s *redisServer
		if s, err = tryRedis(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func tryRedis() (*redisServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "leaseholdotel-redis-")
	if err != nil {
		return nil, err
	}
	log, err := os.CreateTemp(dir, "redis.log")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(redisBinary(), "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no", "--loglevel", "warning")
	// Files, not pipes: os/exec then starts no goroutine to copy output.
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	s := &redisServer{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, log: log,
		exit: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.exit) }()
	for deadline := time.Now().Add(10 * time.Second); ping(s.addr) != nil; {
		select {
		case <-s.exit: // the port was taken meanwhile, most likely
		case <-time.After(10 * time.Millisecond):
			if time.Now().Before(deadline) {
				continue
			}
		}
		out, _ := os.ReadFile(log.Name())
		s.stop()
		return nil, fmt.Errorf("redis-server on port %d did not start: %s", port, out)
	}
	return s, nil
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// stop kills the server, waits for it, and removes its directory.
func (s *redisServer) stop() {
	_ = s.cmd.Process.Kill()
	<-s.exit
	s.log.Close()
	os.RemoveAll(s.dir)
}
