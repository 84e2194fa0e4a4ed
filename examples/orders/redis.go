package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// withRedis runs f against the Redis at $REDIS_ADDR or, when that is unset,
// against a redis-server it starts on a free loopback port, says so on
// stdout, and stops after f returns, even when f fails, and however this
// process ends: a signal (Ctrl-C, SIGTERM, a closed stdout as in `| head`)
// stops the server first, and on Linux the kernel kills it when this process
// dies (kill -9 included; redis_linux.go). Every example has these same
// files, so that each can be copied out on its own.
func withRedis(f func(addr string) error) error {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return f(addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port free a moment ago
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// $LEASEHOLD_REDIS_SERVER names another server binary (a Valkey, an
	// older Redis), as for the tests.
	bin := cmp.Or(os.Getenv("LEASEHOLD_REDIS_SERVER"), "redis-server")
	srv := exec.CommandContext(ctx, bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	// stop sends SIGTERM; Wait kills the server if it has not exited 5s later.
	srv.Cancel = func() error { return srv.Process.Signal(syscall.SIGTERM) }
	srv.WaitDelay = 5 * time.Second
	srv.SysProcAttr = serverAttr()
	if err := srv.Start(); err != nil {
		return fmt.Errorf("no REDIS_ADDR, and no redis-server to start: %w", err)
	}
	defer func() { stop(); _ = srv.Wait() }()
	sigs, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer func() { signal.Stop(sigs); close(done) }()
	go func() {
		select {
		case sig := <-sigs:
			stop()
			_ = srv.Wait()
			fmt.Fprintf(os.Stderr, "%v: stopped redis-server on %s\n", sig, addr)
			os.Exit(1)
		case <-done:
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !answersPing(addr) {
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer PING in 5s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("started redis-server on %s\n", addr)
	return f(addr)
}

// answersPing reports whether the Redis at addr answers PING with PONG.
func answersPing(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	reply := make([]byte, len("+PONG\r\n"))
	_, _ = conn.Write([]byte("PING\r\n")) // if it fails, so does the read
	_, err = io.ReadFull(conn, reply)
	return err == nil && string(reply) == "+PONG\r\n"
}
