package fencedb_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/fence"
)

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// check runs Table.Check in a transaction of its own and commits it, or
// rolls it back when refused.
func check(ctx context.Context, db *sql.DB, table fence.Table, resource string, token uint64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := table.Check(ctx, tx, resource, token); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// freshTable is a Table named name on d, made anew for this run (a test run
// with -count=2 meets the tables of the first).
func freshTable(t *testing.T, ctx context.Context, d database, name string) fence.Table {
	t.Helper()
	table := fence.Table{Dialect: d.dialect, Name: name}
	if _, err := d.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	// Twice: Create is idempotent.
	for range 2 {
		if err := table.Create(ctx, d.db); err != nil {
			t.Fatal(err)
		}
	}
	return table
}

// A token equal to the last is applied, a higher one too, a lower one is
// refused with an error that names the resource and both tokens; resources
// are apart, compared byte for byte; tokens reach 2^63-1.
func TestCheck(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			ctx := ctxFor(t)
			table := freshTable(t, ctx, d, "fence_check_"+strings.ReplaceAll(d.name, "-", "_"))
			steps := []struct {
				resource  string
				token     uint64
				wantStale bool
				last      uint64 // the token applied, for a stale one
			}{
				{"acct", 100, false, 0},
				{"acct", 100, false, 0},
				{"acct", 99, true, 100},
				{"acct", 101, false, 0},
				{"Acct", 5, false, 0}, // another resource
				{"acct", 1, true, 101},
				{"acct", 100, true, 101},
				{"acct", 101, false, 0},
				{"big", math.MaxInt64, false, 0},
				{"big", math.MaxInt64 - 1, true, math.MaxInt64},
				{"big", math.MaxInt64, false, 0},
			}
			for i, s := range steps {
				err := check(ctx, d.db, table, s.resource, s.token)
				if errors.Is(err, fence.ErrStale) != s.wantStale || (!s.wantStale && err != nil) {
					t.Fatalf("step %d: Check(%s, %d): %v, want stale %v", i, s.resource, s.token, err, s.wantStale)
				}
				if !s.wantStale {
					continue
				}
				msg := err.Error()
				for _, part := range []string{strconv.Quote(s.resource), strconv.FormatUint(s.token, 10) + ":", strconv.FormatUint(s.last, 10) + " applied"} {
					if !strings.Contains(msg, part) {
						t.Errorf("step %d: %q does not name %s", i, msg, part)
					}
				}
			}
		})
	}
}

// The check is part of the caller's transaction: rolled back, its token is
// as if never seen.
func TestCheckRolledBack(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			ctx := ctxFor(t)
			table := freshTable(t, ctx, d, "fence_rollback")
			res := "rollback-" + d.name
			if err := check(ctx, d.db, table, res, 10); err != nil {
				t.Fatal(err)
			}
			tx, err := d.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := table.Check(ctx, tx, res, 20); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := check(ctx, d.db, table, res, 15); err != nil {
				t.Fatalf("Check(15) after Check(20) rolled back: %v", err)
			}
		})
	}
}

// Two transactions check one resource: the second waits for the first's
// lock; the lower token is refused if the higher commits first, and the
// higher applied after the lower otherwise. Never both with the lower last.
func TestCheckWaitsForTheOther(t *testing.T) {
	for _, d := range databases {
		for _, order := range []struct {
			name          string
			first, second uint64
			wantStale     bool
		}{
			{"higher first", 20, 10, true},
			{"lower first", 10, 20, false},
		} {
			t.Run(d.name+"/"+order.name, func(t *testing.T) {
				ctx := ctxFor(t)
				table := freshTable(t, ctx, d, "fence_wait")
				res := "wait-" + d.name + "-" + order.name
				// The row exists: both transactions meet on it.
				if err := check(ctx, d.db, table, res, 1); err != nil {
					t.Fatal(err)
				}
				tx1, err := d.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx1.Rollback()
				if err := table.Check(ctx, tx1, res, order.first); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- check(ctx, d.db, table, res, order.second) }()
				select {
				case err := <-done:
					t.Fatalf("the second transaction ended (%v) while the first held the row", err)
				case <-time.After(300 * time.Millisecond):
				}
				if err := tx1.Commit(); err != nil {
					t.Fatal(err)
				}
				err = <-done
				if errors.Is(err, fence.ErrStale) != order.wantStale || (!order.wantStale && err != nil) {
					t.Fatalf("second Check(%d) after Check(%d): %v, want stale %v", order.second, order.first, err, order.wantStale)
				}
				// 20 is what the resource keeps either way.
				if err := check(ctx, d.db, table, res, 19); !errors.Is(err, fence.ErrStale) {
					t.Fatalf("Check(19) at the end: %v, want ErrStale", err)
				}
			})
		}
	}
}

// retryable is a transaction the database aborted for another's sake (a
// deadlock, a serialization failure, a busy SQLite): the caller retries.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"deadlock", "40001", "40P01", "Error 1213", "Error 1205", "database is locked", "SQLITE_BUSY"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Transactions race on one resource, each checking a token in random order
// and then writing a row: the rows committed, in the order the database
// numbered them, carry tokens that never go down, and every transaction was
// either committed or refused.
func TestConcurrentTransactions(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			ctx := ctxFor(t)
			table := freshTable(t, ctx, d, "fence_race")
			ddl := map[fence.Dialect]string{
				fence.Postgres: "CREATE TABLE fence_writes (id BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL)",
				fence.MySQL:    "CREATE TABLE fence_writes (id BIGINT AUTO_INCREMENT PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB",
				fence.SQLite:   "CREATE TABLE fence_writes (id INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL)",
			}
			for _, q := range []string{"DROP TABLE IF EXISTS fence_writes", ddl[d.dialect]} {
				if _, err := d.db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			const workers, each = 8, 25
			var committed, refused, retried atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(w), 7))
					for i := range each {
						// Rising on the whole, with every worker's tokens in
						// a window that overlaps the others'.
						tok := uint64(1 + i*10 + rnd.IntN(40))
						for {
							err := write(ctx, d, table, tok)
							if retryable(err) {
								retried.Add(1)
								continue
							}
							switch {
							case errors.Is(err, fence.ErrStale):
								refused.Add(1)
							case err != nil:
								t.Error(err)
								return
							default:
								committed.Add(1)
							}
							break
						}
					}
				}()
			}
			wg.Wait()
			rows, err := d.db.QueryContext(ctx, "SELECT token FROM fence_writes ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var n, prev int64
			for rows.Next() {
				var tok int64
				if err := rows.Scan(&tok); err != nil {
					t.Fatal(err)
				}
				if tok < prev {
					t.Errorf("row %d: token %d committed after %d", n, tok, prev)
				}
				prev = tok
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d committed, %d refused as stale, %d retried", committed.Load(), refused.Load(), retried.Load())
			if n != committed.Load() || committed.Load()+refused.Load() != workers*each {
				t.Errorf("%d rows, %d committed, %d refused: want rows = committed, and %d in all", n, committed.Load(), refused.Load(), workers*each)
			}
			if refused.Load() == 0 {
				t.Error("no check refused: the test raced nothing")
			}
		})
	}
}

// write checks tok on the resource "acct" and adds a row, in one
// transaction.
func write(ctx context.Context, d database, table fence.Table, tok uint64) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := table.Check(ctx, tx, "acct", tok); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, d.insert, int64(tok)); err != nil {
		return err
	}
	return tx.Commit()
}
