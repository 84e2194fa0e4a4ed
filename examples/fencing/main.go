// Command fencing shows what a fencing token is for: a worker paused past
// its lease writes after another holder did, and only the resource can refuse
// its write.
//
// Worker processes move money from one account to another, alice's to
// bob's, in a PostgreSQL ledger: under the lock "ledger" (an rlock), each reads both
// balances, works a moment, then writes the new balances and a row of the
// transfer, in one transaction that first checks the lease's token with
// fence.Table (fenced), or not at all (-nofence).
//
// Worker 1 takes the lock first, reads the balances and starts working; the
// supervisor stops it with SIGSTOP (as a long GC pause or a frozen VM would),
// then starts the other workers. Worker 1 renews nothing while stopped, so
// its lease runs out in Redis (-ttl) and worker 2 or 3 takes the lock and
// moves money. Then the supervisor resumes worker 1, which writes what it
// computed before its pause, as code paused between its check and its write
// does. Fenced, the database refuses the write (fence.ErrStale: a higher
// token was applied) and the ledger balances: each account holds its opening
// balance plus the transfers recorded. With -nofence the late write lands:
// it overwrites the balances with figures that predate the other workers'
// transfers, which the ledger still records, and the ledger no longer
// balances.
//
// It exits non-zero if the outcome is not the one its mode shows: fenced, a
// refused write and a ledger that balances; -nofence, a write that landed
// and a ledger that does not.
//
// It uses the Redis at $REDIS_ADDR and the PostgreSQL at $DATABASE_URL, or
// starts a server of each on free loopback ports and stops them on the way
// out.
//
//	go run .
//	go run . -nofence
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/rlock"
)

var (
	noFence   = flag.Bool("nofence", false, "write without checking the token: the paused worker's write lands")
	workers   = flag.Int("workers", 3, "worker processes")
	transfers = flag.Int("transfers", 3, "transfers each worker but the first makes")
	ttl       = flag.Duration("ttl", time.Second, "the watchdog lease: how long a stopped worker keeps the lock")
	// Set when the supervisor starts a worker.
	worker    = flag.Int("worker", 0, "run as worker `N` (the supervisor sets it)")
	redisFlag = flag.String("redis", "", "Redis address of a worker (the supervisor sets it)")
	dbFlag    = flag.String("db", "", "PostgreSQL URL of a worker (the supervisor sets it)")
	work      = flag.Duration("work", 50*time.Millisecond, "how long a worker works between its read and its write")
)

// The lock and the fenced resource. The lock's name and the resource's need
// not be the same; the token is what they share.
const (
	lockName = "ledger"
	resource = "ledger"
	opening  = 1000 // each account's opening balance
)

func main() {
	log.SetFlags(0)
	flag.Parse()
	if *worker > 0 {
		if err := run(*worker, *redisFlag, *dbFlag); err != nil {
			log.Fatalf("worker %d: %v", *worker, err)
		}
		return
	}
	err := withRedis(func(addr string) error {
		return withPostgres(func(dsn string) error { return supervise(addr, dsn) })
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run is one worker process: its transfers, each under the lock. Worker 1
// makes one, taking -work to do it, during which the supervisor stops it.
func run(id int, addr, dsn string) error {
	ctx := context.Background()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{addr}}, leasehold.WithWatchdog(*ttl))
	if err != nil {
		return err
	}
	defer c.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	n := *transfers
	if id == 1 {
		n = 1
	}
	l := rlock.New(c, lockName)
	for range n {
		ls, err := l.Acquire(ctx)
		if err != nil {
			return err
		}
		err = transfer(ctx, db, id, ls.Token())
		// Worker 1's lease was lost while it was stopped: Release says so.
		_ = ls.Release(ctx)
		if err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // let another worker have a turn
	}
	return nil
}

// transfer moves a random amount from alice to bob under token: it reads
// both balances, works, then writes them and records the transfer. It
// checks nothing between its read and its write (neither the lease's
// context nor the clock), as code paused in between cannot: only the fence
// stops a late write.
func transfer(ctx context.Context, db *sql.DB, id int, token uint64) error {
	var alice, bob int64
	if err := db.QueryRowContext(ctx, `SELECT
		(SELECT balance FROM accounts WHERE name = 'alice'),
		(SELECT balance FROM accounts WHERE name = 'bob')`).Scan(&alice, &bob); err != nil {
		return err
	}
	// Always from alice to bob: a transfer lost from the balances always
	// shows (random directions could cancel out).
	amount := int64(1 + rand.IntN(50))
	from, to := "alice", "bob"
	alice, bob = alice-amount, bob+amount
	fmt.Printf("worker %d: token %d: read the balances; moving %d from %s to %s (takes %v)\n", id, token, amount, from, to, *work)
	time.Sleep(*work)

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if !*noFence {
		err := fence.Table{Dialect: fence.Postgres}.Check(ctx, tx, resource, token)
		if errors.Is(err, fence.ErrStale) {
			fmt.Printf("worker %d: token %d: write refused: %v\n", id, token, err)
			return nil // rolled back: nothing written
		}
		if err != nil {
			return err
		}
	}
	for name, balance := range map[string]int64{"alice": alice, "bob": bob} {
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = $1 WHERE name = $2", balance, name); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO transfers (worker, token, src, dst, amount) VALUES ($1, $2, $3, $4, $5)",
		id, int64(token), from, to, amount); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fmt.Printf("worker %d: token %d: wrote alice=%d bob=%d\n", id, token, alice, bob)
	return nil
}

// supervise sets up the ledger, runs the workers, stops and resumes worker 1,
// and checks the outcome.
func supervise(addr, dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := setup(ctx, db); err != nil {
		return err
	}
	mode := "fenced: each write checks its token (fence.Table)"
	if *noFence {
		mode = "NOT fenced (-nofence)"
	}
	fmt.Printf("ledger: alice and bob open with %d each; %d workers move money from alice to bob under the lock %q, %s\n", opening, *workers, lockName, mode)

	out := make(chan string, 64) // the workers' lines, printed as they come
	var printed []string
	var wg sync.WaitGroup
	start := func(id int, work time.Duration) (*exec.Cmd, error) {
		args := []string{"-worker", strconv.Itoa(id), "-redis", addr, "-db", dsn, "-ttl", ttl.String(),
			"-transfers", strconv.Itoa(*transfers), "-work", work.String()}
		if *noFence {
			args = append(args, "-nofence")
		}
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = serverAttr() // dies with the supervisor (Linux)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			forward(stdout, out)
		}()
		return cmd, nil
	}
	next := func(rx *regexp.Regexp) ([]string, error) {
		for {
			select {
			case line := <-out:
				fmt.Println(line)
				printed = append(printed, line)
				if m := rx.FindStringSubmatch(line); m != nil {
					return m, nil
				}
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for a line matching %q: %w", rx, ctx.Err())
			}
		}
	}

	// Worker 1 alone first: it takes the lock, reads, and works for 3s.
	first, err := start(1, 3*time.Second)
	if err != nil {
		return err
	}
	m, err := next(regexp.MustCompile(`^worker 1: token (\d+): read`))
	if err != nil {
		return err
	}
	stale, _ := strconv.ParseUint(m[1], 10, 64)
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stopped := time.Now()
	fmt.Printf("supervisor: SIGSTOP worker 1 while it holds the lock with token %d, between its read and its write\n", stale)
	var rest []*exec.Cmd
	for id := 2; id <= *workers; id++ {
		cmd, err := start(id, *work)
		if err != nil {
			return err
		}
		rest = append(rest, cmd)
	}
	// A newer holder has written: worker 1's lease ran out while it was
	// stopped, and another took the lock.
	if _, err := next(regexp.MustCompile(`^worker [2-9]\d*: token \d+: wrote`)); err != nil {
		return err
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	fmt.Printf("supervisor: SIGCONT worker 1 after %v (its lease: %v); another worker has written since\n", time.Since(stopped).Round(100*time.Millisecond), *ttl)
	// The rest of the lines, as they come, until every worker's stdout has
	// ended; only then is each worker waited for (Wait closes its pipe).
	printer := make(chan struct{})
	go func() {
		defer close(printer)
		for line := range out {
			fmt.Println(line)
			printed = append(printed, line)
		}
	}()
	wg.Wait()
	close(out)
	<-printer
	var failed error
	for _, cmd := range append(rest, first) {
		if err := cmd.Wait(); err != nil {
			failed = errors.Join(failed, fmt.Errorf("%s: %w", strings.Join(cmd.Args[1:3], " "), err))
		}
	}
	if failed != nil {
		return failed
	}
	return verdict(ctx, db, printed)
}

// forward sends each line r yields to out.
func forward(r io.Reader, out chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// setup makes the ledger: two accounts, the transfers, and the fence's table.
func setup(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		"DROP TABLE IF EXISTS accounts, transfers, leasehold_fence",
		"CREATE TABLE accounts (name TEXT PRIMARY KEY, balance BIGINT NOT NULL)",
		"INSERT INTO accounts VALUES ('alice', " + strconv.Itoa(opening) + "), ('bob', " + strconv.Itoa(opening) + ")",
		"CREATE TABLE transfers (id BIGSERIAL PRIMARY KEY, worker INT NOT NULL, token BIGINT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, amount BIGINT NOT NULL)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return fence.Table{Dialect: fence.Postgres}.Create(ctx, db)
}

// verdict compares the balances with the opening balances plus the transfers
// recorded, and says whether the outcome is the one this mode shows.
func verdict(ctx context.Context, db *sql.DB, lines []string) error {
	balance := map[string]int64{}
	want := map[string]int64{"alice": opening, "bob": opening}
	rows, err := db.QueryContext(ctx, "SELECT name, balance FROM accounts")
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		var b int64
		if err := rows.Scan(&name, &b); err != nil {
			return err
		}
		balance[name] = b
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var n int
	rows, err = db.QueryContext(ctx, "SELECT src, dst, amount FROM transfers ORDER BY id")
	if err != nil {
		return err
	}
	for rows.Next() {
		var src, dst string
		var amount int64
		if err := rows.Scan(&src, &dst, &amount); err != nil {
			return err
		}
		want[src] -= amount
		want[dst] += amount
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	balances := balance["alice"] == want["alice"] && balance["bob"] == want["bob"]
	var refused, late bool
	for _, l := range lines {
		refused = refused || strings.HasPrefix(l, "worker 1: ") && strings.Contains(l, "write refused")
		late = late || strings.HasPrefix(l, "worker 1: ") && strings.Contains(l, ": wrote ")
	}
	fmt.Printf("ledger: alice=%d bob=%d; the opening balances plus the %d transfers recorded give alice=%d bob=%d: ",
		balance["alice"], balance["bob"], n, want["alice"], want["bob"])
	if balances {
		fmt.Println("it balances")
	} else {
		fmt.Printf("it DOES NOT balance: the balances miss %d moved to bob\n", balance["alice"]-want["alice"])
	}
	switch {
	case !*noFence && refused && !late && balances:
		fmt.Println("ok: the paused worker's late write was refused (fence.ErrStale), and the ledger balances")
	case *noFence && late && !balances:
		fmt.Println("ok: without the fence the paused worker's late write landed over a newer holder's, and the ledger does not balance")
	default:
		return fmt.Errorf("unexpected outcome (fenced %v): worker 1's write refused %v, landed %v; ledger balances %v", !*noFence, refused, late, balances)
	}
	return nil
}
