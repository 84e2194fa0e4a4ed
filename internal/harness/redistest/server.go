package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Server is one redis-server process owned by a test (Start) or a program
// (Launch).
type Server struct {
	tb      testing.TB // nil for Launch
	port    int
	netns   string   // Config.Netns
	host    string   // Config.Host
	env     []string // Config.Env
	args    []string
	conf    string // a config file, passed first (a sentinel's); "" for none
	dir     string
	tempDir bool // dir was made by Launch and is removed by Stop

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has been waited for
}

// Binary is the redis-server the harness runs.
func Binary() string {
	if b := os.Getenv("LEASEHOLD_REDIS_SERVER"); b != "" {
		return b
	}
	return "redis-server"
}

// Version is the name ("redis" or "valkey") and major version of the
// server Binary runs, read once from its --version; 0 when it cannot be
// read.
func Version() (name string, major int) {
	versionOnce.Do(func() {
		out, _ := exec.Command(Binary(), "--version").Output()
		serverName, serverMajor = parseVersion(string(out))
	})
	return serverName, serverMajor
}

var (
	versionOnce sync.Once
	serverName  string
	serverMajor int
)

// parseVersion reads "Redis server v=7.0.15 sha=..." or "Valkey server
// v=8.0.1 ...".
func parseVersion(out string) (name string, major int) {
	name = "redis"
	if strings.HasPrefix(strings.ToLower(out), "valkey") {
		name = "valkey"
	}
	if _, v, ok := strings.Cut(out, " v="); ok {
		m, _, _ := strings.Cut(v, ".")
		major, _ = strconv.Atoi(m)
	}
	return name, major
}

// Start runs a redis-server on a free loopback port, without persistence,
// with the extra args given (e.g. "--enable-debug-command", "local"), and
// stops it when the test ends. It fails the test if the server does not start.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	s := &Server{tb: tb, args: args, dir: tb.TempDir()}
	if err := s.launch(); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Config is where StartWith runs a server, and how.
type Config struct {
	// Netns is the network namespace (ip netns) to run it in; "" for the
	// test's own. It needs root, and a namespace whose loopback is up.
	Netns string
	// Host is the address it listens on besides 127.0.0.1, and the one
	// Addr gives; "" for 127.0.0.1 alone. A replica announces it.
	Host string
	// Env is added to the server's environment (LD_PRELOAD=...).
	Env  []string
	Args []string
}

// StartWith runs a redis-server as Start does, where and as cfg says.
func StartWith(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s := &Server{tb: tb, netns: cfg.Netns, host: cfg.Host, env: cfg.Env, args: cfg.Args, dir: tb.TempDir()}
	if err := s.launch(); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Launch runs a redis-server as Start does, for a program rather than a test
// (the examples): the caller must Stop it.
func Launch(args ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "leasehold-redis-")
	if err != nil {
		return nil, err
	}
	s := &Server{args: args, dir: dir, tempDir: true}
	if err := s.launch(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) launch() error {
	if _, err := exec.LookPath(Binary()); err != nil {
		return fmt.Errorf("%s not found (install it: apt-get install -y redis-server): %w", Binary(), err)
	}
	var err error
	for try := 0; try < 5; try++ {
		if s.port, err = FreePort(); err != nil {
			continue
		}
		if err = s.start(); err == nil {
			return nil
		}
	}
	return fmt.Errorf("start redis-server: %w", err)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// compatible drops from args what the server does not know and does
// without: Redis 6 has DEBUG always enabled and no --enable-debug-command.
func compatible(args []string) []string {
	if name, major := Version(); name != "redis" || major != 6 {
		return args
	}
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--enable-debug-command" {
			i++ // and its value
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// portFree reports whether the loopback TCP port is free a moment ago.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func (s *Server) start() error {
	argv := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1"}
	if s.host != "" && s.host != "127.0.0.1" {
		argv = append(argv, s.host) // --bind takes several
	}
	argv = append(argv,
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--protected-mode", "no",
		"--loglevel", "warning",
	)
	argv = append(argv, compatible(s.args)...)
	if s.conf != "" {
		argv = append([]string{s.conf}, argv...) // redis-server reads a file only as argv[1]
	}
	cmd := exec.Command(Binary(), argv...)
	if s.netns != "" {
		// ip netns exec runs the server in place of itself: same pid.
		cmd = exec.Command("ip", append([]string{"netns", "exec", s.netns, Binary()}, argv...)...)
	}
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pid, err := serverPID(s.Addr())
		if err == nil && pid == cmd.Process.Pid {
			break
		}
		if err == nil {
			// Another test's server took the port between FreePort and
			// this start (ours then exits, unable to bind): answering
			// PING, it would pass for ours until its test ends.
			_ = cmd.Process.Kill()
			<-exit
			return fmt.Errorf("port %d is another server's (pid %d)", s.port, pid)
		}
		select {
		case <-exit:
			out, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on port %d exited at start: %s", s.port, out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exit
			return fmt.Errorf("redis-server on port %d did not answer PING", s.port)
		}
	}
	s.mu.Lock()
	s.cmd, s.exit = cmd, exit
	s.mu.Unlock()
	return nil
}

// serverPID asks the server at addr for its process id (INFO server), so
// that a start knows the server that answers is the one it ran.
func serverPID(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO answered %q", strings.TrimSpace(head))
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("INFO server: no process_id: %w", err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
}

// Addr is the server's host:port: its Config's Host, or 127.0.0.1.
func (s *Server) Addr() string { return net.JoinHostPort(s.hostname(), strconv.Itoa(s.port)) }

// hostname is the host of Addr.
func (s *Server) hostname() string {
	if s.host != "" {
		return s.host
	}
	return "127.0.0.1"
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Option is a rueidis option for this server, for leasehold.Open. It keeps
// rueidis' timeouts short so that tests of faults see them in good time.
func (s *Server) Option() rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:      []string{s.Addr()},
		ConnWriteTimeout: 2 * time.Second,
		Dialer:           net.Dialer{Timeout: time.Second},
	}
}

// Client returns a plain rueidis client (no client-side cache) closed when
// the test ends: the test's own view of Redis.
func (s *Server) Client() rueidis.Client {
	s.tb.Helper()
	// ForceSingleClient: this server's own view, even when it is a node of
	// a cluster (rueidis would otherwise route by slot).
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		s.tb.Fatalf("redistest: client: %v", err)
	}
	s.tb.Cleanup(c.Close)
	return c
}

// Do runs one command on a fresh connection and returns its reply, failing
// the test on a connection error (not on a Redis error reply).
func (s *Server) Do(args ...string) rueidis.RedisResult {
	s.tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, DisableRetry: true, ForceSingleClient: true})
	if err != nil {
		s.tb.Fatalf("redistest: client: %v", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(sig)
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to die.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped process must run to die
	_ = cmd.Process.Kill()
	<-exit
}

// Restart starts the server again on the same port, empty (no persistence).
// It waits for the port to be free again if needed, and fails the test if
// the server does not come back.
func (s *Server) Restart() {
	var err error
	for try := 0; try < 50; try++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s.tb == nil {
		panic("redistest: restart: " + err.Error())
	}
	s.tb.Fatalf("redistest: restart: %v", err)
}

// Pause stops the process (SIGSTOP): it keeps its connections but answers
// nothing until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// Stop kills the server if it runs; tests need not call it (Start stops it
// when the test ends), programs that Launch must.
func (s *Server) Stop() {
	s.Kill()
	if s.tempDir {
		os.RemoveAll(s.dir)
	}
}
