package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	for _, tt := range []struct {
		give *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.25.0", Main: debug.Module{Path: "github.com/leasehold/leasehold", Version: "v0.1.0"}}, true,
			"leasehold v0.1.0 go1.25.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/leasehold/leasehold", Version: "(devel)"}}, true,
			"leasehold (devel) go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/leasehold/leasehold"}}, true,
			"leasehold (devel) go1.26.8"},
		{nil, false, "leasehold (unknown)"},
	} {
		if got := versionLine(tt.give, tt.ok); got != tt.want {
			t.Errorf("versionLine(%+v, %v) = %q, want %q", tt.give, tt.ok, got, tt.want)
		}
	}
}

// version, -version and --version print one line, dial no Redis (the address
// here has nothing listening) and ignore the connection flags.
func TestVersion(t *testing.T) {
	want := regexp.MustCompile(`^leasehold (\(devel\)|v\S+) ` + regexp.QuoteMeta(runtime.Version()) + "\n$")
	for _, args := range [][]string{
		{"version"},
		{"-version"},
		{"--version"},
		{"-addr", "127.0.0.1:1", "version"},
		{"-version", "inspect", "x"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out); err != nil {
			t.Errorf("leasehold %q: %v", args, err)
			continue
		}
		if !want.MatchString(out.String()) {
			t.Errorf("leasehold %q printed %q; want a line matching %v", args, out.String(), want)
		}
	}
	err := run(context.Background(), []string{"version", "x"}, strings.NewReader(""), new(bytes.Buffer))
	if !errors.As(err, new(usageError)) {
		t.Errorf("leasehold version x: %v, want a usage error", err)
	}
}
