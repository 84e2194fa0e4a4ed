package chaos

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/dbtest"
	"github.com/leasehold/leasehold/internal/harness/redistest"
	"github.com/leasehold/leasehold/rlock"
)

// fencedWorkerEnv, when set to a JSON fencedConfig, turns the test binary
// into a worker of TestFencedResource (see TestMain).
const fencedWorkerEnv = "LEASEHOLD_CHAOS_FENCED_WORKER"

// fencedConfig is what a worker of TestFencedResource does: loop take the
// lock, work, write its token to both resources, release, until its stdin
// closes.
type fencedConfig struct {
	Lock     string        `json:"lock"`     // the lock's Redis
	Resource string        `json:"resource"` // the resource's Redis, another server
	DB       string        `json:"db"`       // the resource's PostgreSQL
	Watchdog time.Duration `json:"watchdog"`
	Work     time.Duration `json:"work"`
	Fenced   bool          `json:"fenced"`
}

// The resources: a Redis list and a table, each appended one token per
// write; a stale write that lands is a token below one appended before it.
const (
	fencedName = "fenced"
	fencedKey  = "fenced:log"
)

// TestFencedResource: holders of an rlock write their fencing token to a
// Redis key (fence.Redis) and to a PostgreSQL table (fence.Table) on
// resources that outlive the lock's faults; holders are stopped with SIGSTOP
// past their lease between their read and their write (kept stopped until
// a newer holder has written), and others are killed with kill -9 while
// holding. With the fence no stale write lands in either store, and the
// late writes are refused; without it, the late writes land.
func TestFencedResource(t *testing.T) {
	pg := dbtest.StartPostgres(t)
	for _, fenced := range []bool{true, false} {
		name := map[bool]string{true: "fenced", false: "unfenced"}[fenced]
		t.Run(name, func(t *testing.T) {
			lock, res := redistest.Start(t), redistest.Start(t)
			db, err := sql.Open("pgx", pg.DSN)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for _, q := range []string{
				"DROP TABLE IF EXISTS fenced_writes, leasehold_fence",
				"CREATE TABLE fenced_writes (id BIGSERIAL PRIMARY KEY, token BIGINT NOT NULL)",
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if err := (fence.Table{Dialect: fence.Postgres}).Create(ctx, db); err != nil {
				t.Fatal(err)
			}
			cfg := fencedConfig{Lock: lock.Addr(), Resource: res.Addr(), DB: pg.DSN, Watchdog: 400 * time.Millisecond,
				Work: 150 * time.Millisecond, Fenced: fenced}
			f := &fencedRig{t: t, cfg: cfg, lines: make(chan fencedLine, 256), procs: map[string]*fencedProc{},
				refused: map[string]int{}, done: map[string]bool{}}
			defer f.stopAll()
			for i := range 3 {
				f.spawn("w" + itoa(i))
			}
			pauses, kills := pick(3, 10), pick(2, 6)
			for paused, killed := 0, 0; paused < pauses || killed < kills; {
				// A holder, caught between taking the lock and writing: a
				// line from now on, not one left from before.
				f.drain()
				h := f.await(ctx, func(l fencedLine) bool { return l.what == "hold" })
				p := f.proc(h.worker)
				if paused == pauses || (killed < kills && (paused+killed)%2 == 1) {
					_ = p.cmd.Process.Signal(syscall.SIGKILL)
					<-p.exited
					killed++
					totals.fault("kill -9 fenced holder", 1)
					f.spawn(h.worker + "'")
					continue
				}
				paused++
				_ = p.cmd.Process.Signal(syscall.SIGSTOP)
				totals.fault("SIGSTOP fenced holder > lease", 1)
				// Stopped until a newer holder has written: its lease ran
				// out in Redis meanwhile.
				f.await(ctx, func(l fencedLine) bool { return l.what == "wrote" && l.token > h.token })
				_ = p.cmd.Process.Signal(syscall.SIGCONT)
				eventually(t, 20*time.Second, h.worker+"'s late write", func() bool { return f.wrote(h.worker, h.token) })
			}
			f.stopAll()

			rc := res.Client()
			redisTokens, err := rc.Do(ctx, rc.B().Lrange().Key(fencedKey).Start(0).Stop(-1).Build()).AsStrSlice()
			if err != nil {
				t.Fatal(err)
			}
			var pgTokens []string
			rows, err := db.QueryContext(ctx, "SELECT token FROM fenced_writes ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var tok string
				if err := rows.Scan(&tok); err != nil {
					t.Fatal(err)
				}
				pgTokens = append(pgTokens, tok)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			landedRedis, landedPG := staleLanded(redisTokens), staleLanded(pgTokens)
			f.mu.Lock()
			refusedRedis, refusedPG := f.refused["redis"], f.refused["postgres"]
			f.mu.Unlock()
			t.Logf("%s: %d pauses, %d kills; Redis key: %d writes, %d stale landed, %d refused; PostgreSQL: %d writes, %d stale landed, %d refused",
				name, pauses, kills, len(redisTokens), landedRedis, refusedRedis, len(pgTokens), landedPG, refusedPG)
			if fenced {
				if landedRedis+landedPG > 0 {
					t.Errorf("with the fence, %d stale writes landed on the Redis key and %d in PostgreSQL", landedRedis, landedPG)
				}
				if refusedRedis == 0 || refusedPG == 0 {
					t.Errorf("with the fence, %d late writes refused on the Redis key and %d in PostgreSQL: want some in each (the test paused nobody in time?)", refusedRedis, refusedPG)
				}
			} else if landedRedis == 0 || landedPG == 0 {
				t.Errorf("without the fence, %d stale writes landed on the Redis key and %d in PostgreSQL: want some in each (the test paused nobody in time?)", landedRedis, landedPG)
			}
		})
	}
}

// staleLanded counts the tokens appended after a higher one.
func staleLanded(tokens []string) int {
	n, high := 0, uint64(0)
	for _, s := range tokens {
		tok, _ := strconv.ParseUint(s, 10, 64)
		if tok < high {
			n++
		}
		high = max(high, tok)
	}
	return n
}

// fencedLine is a line of a worker: "hold TOKEN" when it took the lock,
// "wrote TOKEN" when both resources took its write, "refused STORE TOKEN"
// for each that refused it, then "done TOKEN".
type fencedLine struct {
	worker, what, store string
	token               uint64
}

type fencedProc struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}
}

// fencedRig runs TestFencedResource's workers and gathers their lines.
type fencedRig struct {
	t     *testing.T
	cfg   fencedConfig
	lines chan fencedLine
	wg    sync.WaitGroup

	mu      sync.Mutex
	procs   map[string]*fencedProc
	refused map[string]int  // refusals by store
	done    map[string]bool // "WORKER TOKEN" whose writes are done
}

// wrote reports whether worker's writes under token are done.
func (f *fencedRig) wrote(worker string, token uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done[worker+" "+strconv.FormatUint(token, 10)]
}

// drain drops the lines waiting.
func (f *fencedRig) drain() {
	for {
		select {
		case <-f.lines:
		default:
			return
		}
	}
}

func (f *fencedRig) proc(id string) *fencedProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[id]
}

// spawn starts worker id.
func (f *fencedRig) spawn(id string) {
	f.t.Helper()
	js, _ := json.Marshal(f.cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fencedWorkerEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	p := &fencedProc{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	f.mu.Lock()
	f.procs[id] = p
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 2 {
				continue
			}
			l := fencedLine{worker: id, what: fs[0]}
			if fs[0] == "refused" && len(fs) == 3 {
				l.store, fs = fs[1], fs[1:]
				f.mu.Lock()
				f.refused[l.store]++
				f.mu.Unlock()
			}
			l.token, _ = strconv.ParseUint(fs[1], 10, 64)
			if l.what == "wrote" || l.what == "done" {
				f.mu.Lock()
				f.done[id+" "+strconv.FormatUint(l.token, 10)] = true
				f.mu.Unlock()
			}
			select {
			case f.lines <- l:
			default: // nobody waits for lines now: the stores have the facts
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
}

// await returns the first line from now on that match accepts, and fails
// the test if none comes before ctx ends.
func (f *fencedRig) await(ctx context.Context, match func(fencedLine) bool) fencedLine {
	f.t.Helper()
	for {
		select {
		case l := <-f.lines:
			if match(l) {
				return l
			}
		case <-ctx.Done():
			f.t.Fatalf("waiting for a worker's line: %v", ctx.Err())
		}
	}
}

// stopAll closes every worker's stdin, resumes any stopped one, and waits
// for them all.
func (f *fencedRig) stopAll() {
	f.mu.Lock()
	procs := f.procs
	f.procs = map[string]*fencedProc{}
	f.mu.Unlock()
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.stdin.Close()
	}
	for id, p := range procs {
		select {
		case <-p.exited:
		case <-time.After(20 * time.Second):
			f.t.Errorf("worker %s did not stop in 20s", id)
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	f.wg.Wait()
}

// fencedWorkerMain is the test binary run as a worker of TestFencedResource.
func fencedWorkerMain(js string) int {
	var cfg fencedConfig
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fenced worker:", err)
		return 2
	}
	if err := runFencedWorker(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fenced worker:", err)
		return 1
	}
	return 0
}

// runFencedWorker loops: take the lock, say "hold", work, write the token to
// both resources without looking at the lease (a late write, as a holder
// paused between its check and its write makes), release.
func runFencedWorker(cfg fencedConfig) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	c, err := leasehold.Open(rueidis.ClientOption{InitAddress: []string{cfg.Lock}}, leasehold.WithWatchdog(cfg.Watchdog))
	if err != nil {
		return err
	}
	defer c.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.Resource}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	db, err := sql.Open("pgx", cfg.DB)
	if err != nil {
		return err
	}
	defer db.Close()
	r, table, l := fence.NewRedis(rc), fence.Table{Dialect: fence.Postgres}, rlock.New(c, fencedName)
	for ctx.Err() == nil {
		ls, err := l.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		tok := ls.Token()
		fmt.Printf("hold %d\n", tok)
		time.Sleep(cfg.Work/2 + rand.N(cfg.Work/2))
		// The writes use their own context: a worker told to stop finishes
		// the write it has begun.
		wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
		wrote, err := fencedWrite(wctx, cfg.Fenced, r, rc, db, table, tok)
		wcancel()
		_ = ls.Release(context.Background())
		if err != nil {
			return err
		}
		fmt.Printf("%s %d\n", wrote, tok)
	}
	return nil
}

// fencedWrite appends tok to both resources, through the fence or not, and
// says what happened: "wrote", or "done" once it has printed the refusals.
func fencedWrite(ctx context.Context, fenced bool, r *fence.Redis, rc rueidis.Client, db *sql.DB, table fence.Table, tok uint64) (string, error) {
	s := strconv.FormatUint(tok, 10)
	outcome := "wrote"
	var err error
	if fenced {
		_, err = r.Do(ctx, fencedKey, tok, "RPUSH", s)
	} else {
		err = rc.Do(ctx, rc.B().Rpush().Key(fencedKey).Element(s).Build()).Error()
	}
	switch {
	case errors.Is(err, fence.ErrStale):
		fmt.Printf("refused redis %d\n", tok)
		outcome = "done"
	case err != nil:
		return "", err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	if fenced {
		err := table.Check(ctx, tx, fencedName, tok)
		if errors.Is(err, fence.ErrStale) {
			fmt.Printf("refused postgres %d\n", tok)
			return "done", nil
		}
		if err != nil {
			return "", err
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO fenced_writes (token) VALUES ($1)", int64(tok)); err != nil {
		return "", err
	}
	return outcome, tx.Commit()
}
