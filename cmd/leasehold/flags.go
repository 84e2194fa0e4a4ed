package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redis/rueidis"
)

// connFlags are the flags that say how to reach Redis. Every flag set of the
// command registers them, so they may come before or after the command.
type connFlags struct {
	addr, user, password string
	db                   int
	tls, tlsInsecure     bool
	tlsCA, tlsCert       string
	tlsKey, tlsServer    string
	prefix               string // put before every lock name given (-prefix)
}

// newConnFlags returns the connection flags with their defaults, read from
// REDIS_ADDR and REDIS_PASSWORD.
func newConnFlags() *connFlags {
	c := &connFlags{addr: os.Getenv("REDIS_ADDR"), password: os.Getenv("REDIS_PASSWORD")}
	if c.addr == "" {
		c.addr = "127.0.0.1:6379"
	}
	return c
}

// newFlagSet returns a flag set with the connection flags registered. Each
// flag's default is its current value, so the command's flag set keeps what
// the flags before the command set. It prints nothing: run reports its
// errors once, and help prints its flags.
func newFlagSet(name string, c *connFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.addr, "addr", c.addr, "Redis `host:port`, comma-separated for a cluster ($REDIS_ADDR)")
	fs.StringVar(&c.user, "user", c.user, "ACL user `name`")
	fs.Var(secret{&c.password}, "password", "`password` ($REDIS_PASSWORD)")
	fs.IntVar(&c.db, "db", c.db, "database `number`")
	fs.BoolVar(&c.tls, "tls", c.tls, "connect with TLS")
	fs.StringVar(&c.tlsCA, "tls-ca", c.tlsCA, "PEM CA certificates `file` to verify the server with")
	fs.StringVar(&c.tlsCert, "tls-cert", c.tlsCert, "PEM client certificate `file` (with -tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", c.tlsKey, "PEM client key `file` (with -tls-cert)")
	fs.StringVar(&c.tlsServer, "tls-server-name", c.tlsServer, "server `name` to verify, if not the address's host")
	fs.BoolVar(&c.tlsInsecure, "tls-insecure", c.tlsInsecure, "do not verify the server's certificate")
	fs.StringVar(&c.prefix, "prefix", c.prefix, "key `prefix` of the service's Client (leasehold.WithKeyPrefix): put before\nevery NAME and PATTERN given, and left out of the names shown")
	return fs
}

// secret is a flag whose value is never shown, not even as the default in
// the usage text (it may come from $REDIS_PASSWORD).
type secret struct{ p *string }

func (s secret) String() string { return "" }

func (s secret) Set(v string) error {
	*s.p = v
	return nil
}

// parseInterleaved parses fs from args, letting flags follow positional
// arguments (release NAME --yes), which the flag package alone stops at. It
// returns the positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		rest := fs.Args()
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			// Parse stopped at "--": everything after it is positional.
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// option is the rueidis option the flags describe. The command's client
// neither caches nor tracks: it only looks, and works with any Redis from
// version 6.
func (c *connFlags) option() (rueidis.ClientOption, error) {
	opt := rueidis.ClientOption{
		InitAddress:  strings.Split(c.addr, ","),
		Username:     c.user,
		Password:     c.password,
		SelectDB:     c.db,
		DisableCache: true,
	}
	tlsWanted := c.tls || c.tlsCA != "" || c.tlsCert != "" || c.tlsServer != "" || c.tlsInsecure
	if !tlsWanted {
		return opt, nil
	}
	cfg := &tls.Config{ServerName: c.tlsServer, InsecureSkipVerify: c.tlsInsecure, MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return opt, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return opt, fmt.Errorf("-tls-ca %s: no PEM certificates", c.tlsCA)
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return opt, usagef("-tls-cert and -tls-key go together")
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return opt, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	opt.TLSConfig = cfg
	return opt, nil
}

// dial connects to Redis as the flags say.
func (c *connFlags) dial() (rueidis.Client, error) {
	opt, err := c.option()
	if err != nil {
		return nil, err
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.addr, err)
	}
	return rc, nil
}
