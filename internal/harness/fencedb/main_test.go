package fencedb_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/leasehold/leasehold/fence"
	"github.com/leasehold/leasehold/internal/harness/dbtest"
)

// database is one database the tests run on, with its dialect.
type database struct {
	name    string
	dialect fence.Dialect
	db      *sql.DB
	// insert adds a row to fence_writes; its placeholder is the dialect's.
	insert string
}

// databases are PostgreSQL, MariaDB (as go-sql-driver/mysql connects by
// default, and with CLIENT_FOUND_ROWS, which changes what affected rows
// count) and SQLite, opened by TestMain.
var databases []database

// TestMain starts PostgreSQL and MariaDB (in parallel: each takes seconds),
// runs the tests, stops the servers, and checks for leaked goroutines.
func TestMain(m *testing.M) {
	before := goleak.IgnoreCurrent()
	var pg, maria *dbtest.Server
	var pgErr, mariaErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pg, pgErr = dbtest.LaunchPostgres() }()
	go func() { defer wg.Done(); maria, mariaErr = dbtest.LaunchMariaDB() }()
	wg.Wait()
	dir, err := os.MkdirTemp("", "leasehold-sqlite-")
	code := 1
	if err = errors.Join(pgErr, mariaErr, err); err == nil {
		code = run(m, pg.DSN, maria.DSN, filepath.Join(dir, "fence.db"))
	} else {
		fmt.Fprintln(os.Stderr, "fencedb:", err)
	}
	for _, s := range []*dbtest.Server{pg, maria} {
		if s != nil {
			s.Stop()
		}
	}
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: Errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// run opens the databases, runs the tests and closes them.
func run(m *testing.M, pgDSN, mariaDSN, sqlitePath string) int {
	open := []struct {
		name, driver, dsn string
		dialect           fence.Dialect
		insert            string
	}{
		{"postgres", "pgx", pgDSN, fence.Postgres, "INSERT INTO fence_writes (token) VALUES ($1)"},
		{"mariadb", "mysql", mariaDSN, fence.MySQL, "INSERT INTO fence_writes (token) VALUES (?)"},
		{"mariadb-found-rows", "mysql", mariaDSN + "?clientFoundRows=true", fence.MySQL, "INSERT INTO fence_writes (token) VALUES (?)"},
		// Immediate transactions take the write lock at BEGIN, and wait
		// for it up to the busy timeout, rather than fail at the first
		// write of two racing transactions.
		{"sqlite", "sqlite", "file:" + sqlitePath + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_txlock=immediate", fence.SQLite, "INSERT INTO fence_writes (token) VALUES (?)"},
	}
	defer func() {
		for _, d := range databases {
			d.db.Close()
		}
	}()
	for _, o := range open {
		db, err := sql.Open(o.driver, o.dsn)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fencedb: open %s: %v\n", o.name, err)
			return 1
		}
		databases = append(databases, database{o.name, o.dialect, db, o.insert})
	}
	return m.Run()
}
