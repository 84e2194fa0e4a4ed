// Package fencedb tests package fence's Table on real databases: PostgreSQL
// and MariaDB started by internal/harness/dbtest, and SQLite through a
// pure-Go driver. It is a module of its own so that the database drivers
// never enter leasehold's module: users of the locks never download them.
package fencedb
