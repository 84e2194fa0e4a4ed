//go:build !linux

package main

import "syscall"

// serverAttr is nil where the kernel cannot kill redis-server when this
// process dies: withRedis stops it on the way out and on a signal.
func serverAttr() *syscall.SysProcAttr { return nil }
