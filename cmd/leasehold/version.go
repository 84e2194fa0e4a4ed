package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// printVersion writes the version line of this binary (see versionLine).
func printVersion(w io.Writer) error {
	_, err := fmt.Fprintln(w, versionLine(debug.ReadBuildInfo()))
	return err
}

// versionLine is "leasehold VERSION GO": the version of the leasehold module
// the binary was built from, as the go command recorded it (vX.Y.Z when
// installed with go install ...@vX.Y.Z; "(devel)" when built in a checkout of
// the repository, or a pseudo-version when the go command stamps one from the
// checkout's VCS), and the Go release that built it.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "leasehold (unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	return "leasehold " + v + " " + bi.GoVersion
}
