package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/lease"
)

// The check and the writes it guards are one transaction: they commit
// together, or a stale holder's roll back.
func ExampleTable_Check() {
	ledger := fence.Table{Dialect: fence.Postgres}
	transfer := func(ctx context.Context, db *sql.DB, l *lease.Lease, amount int64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := ledger.Check(ctx, tx, "ledger", l.Token()); err != nil {
			return err // errors.Is(err, fence.ErrStale): a newer holder has written
		}
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - $1 WHERE name = 'alice'", amount); err != nil {
			return err
		}
		return tx.Commit()
	}
	_ = transfer
}

// A service that owns a resource refuses the request of a holder whose lease
// a newer holder has replaced.
func ExampleGate_Handler() {
	var g fence.Gate
	h := g.Handler(func(r *http.Request) string { return r.URL.Path },
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "written") }))

	for _, token := range []uint64{41, 42, 41} {
		r := httptest.NewRequest(http.MethodPut, "/reports/daily", nil)
		fence.SetHeader(r.Header, token) // the caller's lease.Token()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("token %d: %d %s", token, w.Code, w.Body)
	}
	// Output:
	// token 41: 200 written
	// token 42: 200 written
	// token 41: 409 fence: admit "/reports/daily": fence: stale token 41: 42 applied already
}

func ExampleGate_Admit() {
	var g fence.Gate
	fmt.Println(g.Admit("cache", 7))
	err := g.Admit("cache", 6)
	fmt.Println(errors.Is(err, fence.ErrStale))
	// Output:
	// <nil>
	// true
}
