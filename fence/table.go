package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

// Dialect is the SQL a Table speaks.
type Dialect int

// The dialects. Each one's doc gives the statement Check runs, with the
// default table name, for drivers outside database/sql (pgx's own API, an
// ORM's raw query).
const (
	// Postgres is PostgreSQL's SQL, which CockroachDB and YugabyteDB speak
	// too. Check runs, with $1 the resource and $2 the token:
	//
	//	INSERT INTO leasehold_fence AS f (resource, token) VALUES ($1, $2)
	//	ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token
	//	WHERE f.token <= EXCLUDED.token
	//	RETURNING f.token
	//
	// One row: applied. No row: stale, and the row stays locked until the
	// transaction ends.
	Postgres Dialect = iota + 1
	// MySQL is MySQL's and MariaDB's SQL. Check runs, with the resource
	// and the token as its two parameters:
	//
	//	INSERT INTO leasehold_fence (resource, token) VALUES (?, ?)
	//	ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(IF(token <= VALUES(token), VALUES(token), token))
	//
	// and reads the insert id the server returns with the result
	// (LAST_INSERT_ID()): 0, a new row; the token, applied; a higher one,
	// stale and the token applied already. Affected rows cannot tell an
	// equal token from a stale one (neither changes the row).
	MySQL
	// SQLite is SQLite's SQL (3.35 or later). Check runs, with ?1 the
	// resource and ?2 the token:
	//
	//	INSERT INTO leasehold_fence (resource, token) VALUES (?1, ?2)
	//	ON CONFLICT (resource) DO UPDATE SET token = excluded.token
	//	WHERE token <= excluded.token
	//	RETURNING token
	//
	// One row: applied. No row: stale.
	SQLite
)

// defaultTable is the name of a Table whose Name is empty.
const defaultTable = "leasehold_fence"

// Table is the table where a database keeps the last token applied to each
// resource: columns resource (its primary key) and token (a signed 64-bit
// integer). The zero Name is "leasehold_fence"; a Name may be schema-qualified
// ("app.fence").
type Table struct {
	Dialect Dialect
	Name    string
}

// maxMySQLResource is the longest resource the MySQL table's key holds, in
// bytes: a VARBINARY(255) (bytes, so that resources compare exactly, not by
// a collation that folds case).
const maxMySQLResource = 255

// Create makes the table if it does not exist. It is idempotent.
func (t Table) Create(ctx context.Context, db *sql.DB) error {
	name, err := t.name("create")
	if err != nil {
		return err
	}
	if db == nil {
		return invalid("create", name, "nil *sql.DB")
	}
	var ddl string
	switch t.Dialect {
	case Postgres:
		ddl = "CREATE TABLE IF NOT EXISTS " + name + " (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)"
	case MySQL:
		ddl = "CREATE TABLE IF NOT EXISTS " + name + " (resource VARBINARY(" + strconv.Itoa(maxMySQLResource) +
			") NOT NULL PRIMARY KEY, token BIGINT NOT NULL) ENGINE=InnoDB"
	case SQLite:
		ddl = "CREATE TABLE IF NOT EXISTS " + name + " (resource TEXT PRIMARY KEY, token INTEGER NOT NULL)"
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return &Error{Op: "create", Resource: name, Err: err}
	}
	return nil
}

// Check applies token to resource within tx: it records token unless a
// higher one is recorded, in one statement (the Dialect's), and returns an
// error wrapping ErrStale if one is. The check and the caller's writes in tx
// then commit or roll back together; on ErrStale the caller rolls tx back.
// Of two transactions checking one resource, the one with the lower token
// waits for the other's lock and is refused once it commits, or goes
// first; the lower never commits after the higher.
//
// At REPEATABLE READ or SERIALIZABLE, a concurrent check may instead fail
// tx with the database's serialization error, to retry as any such failure.
// Token 0 (a lease with no fencing token) and tokens above 2^63-1 are
// refused with an error wrapping lease.ErrInvalid, as are an empty resource
// and a nil tx.
func (t Table) Check(ctx context.Context, tx *sql.Tx, resource string, token uint64) error {
	name, err := t.name("check")
	switch {
	case err != nil:
		return err
	case resource == "":
		return invalid("check", resource, "empty resource")
	case tx == nil:
		return invalid("check", resource, "nil *sql.Tx")
	case t.Dialect == MySQL && len(resource) > maxMySQLResource:
		return invalid("check", resource, "resource longer than "+strconv.Itoa(maxMySQLResource)+" bytes")
	}
	if err := checkToken("check", resource, token); err != nil {
		return err
	}
	tok := int64(token)
	if t.Dialect == MySQL {
		return t.checkMySQL(ctx, tx, name, resource, tok)
	}
	var applied int64
	err = tx.QueryRowContext(ctx, t.statement(name), resource, tok).Scan(&applied)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return t.refuse(ctx, tx, name, resource, token)
	case err != nil:
		return &Error{Op: "check", Resource: resource, Err: err}
	}
	return nil
}

// checkMySQL runs MySQL's statement, whose insert id says what it did.
func (t Table) checkMySQL(ctx context.Context, tx *sql.Tx, name, resource string, token int64) error {
	res, err := tx.ExecContext(ctx, t.statement(name), resource, token)
	if err != nil {
		return &Error{Op: "check", Resource: resource, Err: err}
	}
	last, err := res.LastInsertId()
	if err != nil {
		return &Error{Op: "check", Resource: resource, Err: err}
	}
	if last != 0 && last != token {
		return stale("check", resource, uint64(token), uint64(last))
	}
	return nil
}

// refuse reads the token recorded for resource, for the error of a refused
// check. The refused upsert locked the row (Postgres) or the database
// (SQLite), so the token read is the one that refused.
func (t Table) refuse(ctx context.Context, tx *sql.Tx, name, resource string, token uint64) error {
	q := "SELECT token FROM " + name + " WHERE resource = $1"
	if t.Dialect == SQLite {
		q = "SELECT token FROM " + name + " WHERE resource = ?1"
	}
	var last int64
	if err := tx.QueryRowContext(ctx, q, resource).Scan(&last); err != nil {
		return &Error{Op: "check", Resource: resource, Err: fmt.Errorf("%w %d (reading the token applied: %v)", ErrStale, token, err)}
	}
	return stale("check", resource, token, uint64(last))
}

// statement is the Dialect's upsert on the table name.
func (t Table) statement(name string) string {
	switch t.Dialect {
	case Postgres:
		return "INSERT INTO " + name + " AS f (resource, token) VALUES ($1, $2)" +
			" ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token" +
			" WHERE f.token <= EXCLUDED.token RETURNING f.token"
	case MySQL:
		return "INSERT INTO " + name + " (resource, token) VALUES (?, ?)" +
			" ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(IF(token <= VALUES(token), VALUES(token), token))"
	default: // SQLite
		return "INSERT INTO " + name + " (resource, token) VALUES (?1, ?2)" +
			" ON CONFLICT (resource) DO UPDATE SET token = excluded.token" +
			" WHERE token <= excluded.token RETURNING token"
	}
}

// identifier is a table name Table puts in its SQL as it is: a plain name,
// or schema.name.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

// name is the table's name, checked along with its dialect.
func (t Table) name(op string) (string, error) {
	name := t.Name
	if name == "" {
		name = defaultTable
	}
	if t.Dialect < Postgres || t.Dialect > SQLite {
		return "", invalid(op, name, "unknown dialect "+strconv.Itoa(int(t.Dialect)))
	}
	if !identifier.MatchString(name) {
		return "", invalid(op, name, "table name not an identifier")
	}
	return name, nil
}
