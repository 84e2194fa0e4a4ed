package fence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
)

// Bad input fails before any database is asked (the statements themselves
// are tested on PostgreSQL, MariaDB and SQLite in internal/harness/fencedb).
func TestTableInvalid(t *testing.T) {
	ctx := context.Background()
	pg := fence.Table{Dialect: fence.Postgres}
	tests := []struct {
		name string
		err  error
	}{
		{"no dialect", fence.Table{}.Check(ctx, nil, "r", 1)},
		{"unknown dialect", fence.Table{Dialect: 9}.Create(ctx, nil)},
		{"table name", fence.Table{Dialect: fence.Postgres, Name: "x; DROP TABLE y"}.Check(ctx, nil, "r", 1)},
		{"nil db", pg.Create(ctx, nil)},
		{"nil tx", pg.Check(ctx, nil, "r", 1)},
		{"empty resource", pg.Check(ctx, nil, "", 1)},
		{"token 0", pg.Check(ctx, nil, "r", 0)},
		{"mysql resource too long", fence.Table{Dialect: fence.MySQL}.Check(ctx, nil, string(make([]byte, 256)), 1)},
	}
	for _, tt := range tests {
		var fe *fence.Error
		if !errors.Is(tt.err, lease.ErrInvalid) || !errors.As(tt.err, &fe) {
			t.Errorf("%s: %v, want a *fence.Error wrapping lease.ErrInvalid", tt.name, tt.err)
		}
	}
}
