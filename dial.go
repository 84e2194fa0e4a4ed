package leasehold

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/lease"
)

// dialErr is Open's error when rueidis could not make its client with opt:
// it names the address and what went wrong, in terms of opt's settings, and
// wraps err (and lease.ErrInvalid, lease.ErrRedis or context.DeadlineExceeded
// where one applies).
func dialErr(opt rueidis.ClientOption, err error) error {
	if len(opt.InitAddress) == 0 {
		return fmt.Errorf("%w: rueidis ClientOption.InitAddress is empty: %w", lease.ErrInvalid, err)
	}
	var (
		addr   = strings.Join(opt.InitAddress, ", ")
		prefix string
		netErr *net.OpError
	)
	switch {
	case opt.Sentinel.MasterSet != "":
		prefix = fmt.Sprintf("through Sentinel %s (master set %s): ", addr, opt.Sentinel.MasterSet)
		addr = "a server"
	case len(opt.InitAddress) > 1:
		prefix = fmt.Sprintf("none of %s could be used: ", addr)
		addr = "a server"
	}
	if errors.As(err, &netErr) && netErr.Addr != nil && prefix != "" {
		addr = netErr.Addr.String() // the one rueidis reports, of several
	}
	return fmt.Errorf("%s%w", prefix, failure(opt, addr, err))
}

// failure says what err, the failure to set up a connection to addr, means.
func failure(opt rueidis.ClientOption, addr string, err error) error {
	var (
		netErr *net.OpError
		header tls.RecordHeaderError
		verify *tls.CertificateVerificationError
		alert  tls.AlertError
		reply  *rueidis.RedisError
	)
	useTLS := opt.TLSConfig != nil
	switch {
	case errors.As(err, &header):
		return fmt.Errorf("%s does not speak TLS, which rueidis ClientOption.TLSConfig asks for: %w", addr, err)
	case errors.As(err, &verify):
		return fmt.Errorf("%s's TLS certificate was not accepted (rueidis ClientOption.TLSConfig): %w", addr, err)
	case errors.As(err, &alert):
		return fmt.Errorf("%s refused the TLS handshake (rueidis ClientOption.TLSConfig): %w", addr, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens at %s: %w", addr, err)
	case timedOut(err):
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		if errors.As(err, &netErr) && netErr.Op == "dial" {
			return fmt.Errorf("%s did not answer the TCP connect within %v, the dial timeout (rueidis ClientOption.Dialer.Timeout): "+
				"no host there, or a firewall dropping the packets: %w", addr, dialTimeout(opt), err)
		}
		d, timeout, option := handshakeTimeout(opt)
		if useTLS {
			return fmt.Errorf("%s did not complete the TLS handshake and answer HELLO within %v, %s (rueidis ClientOption.%s): "+
				"a server that does not speak TLS, or one too busy to answer: %w", addr, d, timeout, option, err)
		}
		return fmt.Errorf("%s accepted the connection but sent no answer to the handshake (HELLO) within %v, %s "+
			"(rueidis ClientOption.%s): a server that is not Redis, or a Redis too busy to answer: %w", addr, d, timeout, option, err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		why := "a server that is not Redis, or a Redis that expects TLS (rueidis ClientOption.TLSConfig)"
		if useTLS {
			why = "a server that does not speak TLS, or one that refused this client's certificate"
		}
		return fmt.Errorf("%s closed the connection without answering the handshake (HELLO): %s: %w", addr, why, err)
	case errors.As(err, &reply):
		code, _, _ := strings.Cut(reply.Error(), " ")
		switch code {
		case "WRONGPASS":
			return fmt.Errorf("%s refused the credentials (rueidis ClientOption.Username, Password): %w", addr, redisErr(err))
		case "NOAUTH":
			return fmt.Errorf("%s asks for a password (rueidis ClientOption.Password, and Username for an ACL user): %w",
				addr, redisErr(err))
		}
		return fmt.Errorf("%s refused the connection's set-up: %w", addr, redisErr(err))
	case notRESP(err):
		return fmt.Errorf("%s is not a Redis: it answered the handshake (HELLO) with no RESP reply%s: %w",
			addr, guess(err), err)
	}
	return fmt.Errorf("%s: %w", addr, err)
}

// timedOut reports whether err is a timeout: the dial's context's, a
// connection's deadline, or a net.Error saying so.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// dialTimeout is opt's bound on a connect, as rueidis reads it.
func dialTimeout(opt rueidis.ClientOption) time.Duration {
	if opt.Dialer.Timeout == 0 {
		return rueidis.DefaultDialTimeout
	}
	return opt.Dialer.Timeout
}

// handshakeTimeout is what bounds the handshake rueidis sends on a new
// connection (HELLO and the commands after it): the dial timeout, or the
// connection's ConnWriteTimeout where that is shorter.
func handshakeTimeout(opt rueidis.ClientOption) (d time.Duration, timeout, option string) {
	d, timeout, option = dialTimeout(opt), "the dial timeout", "Dialer.Timeout"
	if d <= 0 {
		d = rueidis.DefaultDialTimeout
	}
	w := opt.ConnWriteTimeout
	if w == 0 { // rueidis' default: ten keep-alive intervals
		keepAlive := opt.Dialer.KeepAlive
		if keepAlive == 0 {
			keepAlive = rueidis.DefaultTCPKeepAlive
		}
		w = max(rueidis.DefaultTCPKeepAlive, keepAlive) * 10
	}
	if w > 0 && w < d {
		d, timeout, option = w, "the connection's read and write timeout", "ConnWriteTimeout"
	}
	return d, timeout, option
}

// rueidis' own words for bytes that are no RESP reply (it has no sentinel
// error for them).
const (
	unknownType = "received unknown message type: "
	unexpected  = "received unexpected "
)

// notRESP reports whether err is rueidis' reading of bytes that are no RESP.
func notRESP(err error) bool {
	return strings.HasPrefix(err.Error(), unknownType) || strings.HasPrefix(err.Error(), unexpected)
}

// guess names the server that sent the first byte that rueidis reports as
// no RESP type, where the byte tells.
func guess(err error) string {
	_, n, ok := strings.Cut(err.Error(), unknownType)
	b, convErr := strconv.Atoi(n)
	switch {
	case !ok || convErr != nil:
		return ""
	case b == 'H':
		return ` ("H...": an HTTP server?)`
	case b == 0x15 || b == 0x16:
		return " (a TLS record: set rueidis ClientOption.TLSConfig?)"
	}
	return fmt.Sprintf(" (first byte %q)", rune(b))
}
