package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// init gives the quick start a Redis of its own when REDIS_ADDR is unset: it
// starts a redis-server on a free loopback port ($LEASEHOLD_REDIS_SERVER
// names another binary), runs this same program again with REDIS_ADDR set,
// stops the server once that run has ended, however it ended (an error,
// Ctrl-C, a closed stdout as in `| head`, kill -9), and exits as it did.
// main.go is the program; this file only finds it a Redis.
func init() {
	if os.Getenv("REDIS_ADDR") != "" {
		return
	}
	code, err := supervise()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// supervise starts the server, runs the program against it, stops the
// server, and returns the program's exit code.
func supervise() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port free a moment ago
	if err != nil {
		return 0, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	bin := os.Getenv("LEASEHOLD_REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	srv := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	srv.SysProcAttr = serverAttr()
	if err := srv.Start(); err != nil {
		return 0, fmt.Errorf("no REDIS_ADDR, and no redis-server to start: %w", err)
	}
	defer func() { _ = srv.Process.Signal(syscall.SIGTERM); _ = srv.Wait() }()
	// The run hears Ctrl-C and a closed stdout itself; this process waits
	// for it to end, then stops the server.
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	for deadline := time.Now().Add(5 * time.Second); !answersPing(addr); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("redis-server on %s did not answer PING in 5s", addr)
		}
	}
	fmt.Printf("started redis-server on %s\n", addr)
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	run := exec.Command(self, os.Args[1:]...)
	run.Env = append(os.Environ(), "REDIS_ADDR="+addr)
	run.Stdin, run.Stdout, run.Stderr = os.Stdin, os.Stdout, os.Stderr
	run.SysProcAttr = serverAttr()
	err = run.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), nil
	}
	return 0, err
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
