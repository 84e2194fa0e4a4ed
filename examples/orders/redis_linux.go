//go:build linux

package main

import "syscall"

// serverAttr has the kernel kill redis-server when this process dies,
// however it dies.
func serverAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
