package lease

import (
	"context"
	"errors"
	"log/slog"
)

// SlogObserver returns an Observer that logs each Event to l (slog.Default()
// if nil): routine events at Debug, trouble (a lost lease, a failed release,
// a wait ended by Redis or bad input) at Warn.
func SlogObserver(l *slog.Logger) Observer {
	if l == nil {
		l = slog.Default()
	}
	return slogObserver{l}
}

type slogObserver struct{ l *slog.Logger }

func (o slogObserver) Observe(e Event) {
	level := slogLevel(e)
	// Renewals come several times a second from a busy Client: ask the
	// handler before building the record.
	ctx := context.Background()
	if !o.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	if e.Name != "" {
		attrs = append(attrs, slog.String("lock", e.Name))
	}
	if e.Owner != "" {
		attrs = append(attrs, slog.String("owner", e.Owner))
	}
	if e.Token != 0 {
		attrs = append(attrs, slog.Uint64("token", e.Token))
	}
	switch e.Kind {
	case Acquired, Abandoned:
		attrs = append(attrs, slog.Duration("waited", e.Waited))
	case Released, Lost:
		attrs = append(attrs, slog.Duration("held", e.Held))
	case Renewed:
		attrs = append(attrs, slog.Duration("took", e.Took))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.Any("err", e.Err))
	}
	o.l.LogAttrs(ctx, level, "lease "+string(e.Kind), attrs...)
}

// slogLevel is the level SlogObserver logs e at.
func slogLevel(e Event) slog.Level {
	switch {
	case e.Err == nil:
		return slog.LevelDebug
	case errors.Is(e.Err, ErrClosed):
		if e.Kind == Lost {
			return slog.LevelInfo
		}
		return slog.LevelDebug
	case errors.Is(e.Err, ErrNotReplicated):
		// It wraps ErrNotAcquired too, but says replicas did not follow.
		return slog.LevelWarn
	case e.Kind == Abandoned && (errors.Is(e.Err, ErrNotAcquired) ||
		errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded)):
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
