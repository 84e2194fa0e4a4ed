// Package dbtest starts real database servers for tests: PostgreSQL and
// MariaDB from the machine's packages (apt-get install postgresql-15
// mariadb-server), each in a temporary directory on a free loopback port, as
// their own unprivileged user when the test runs as root (both refuse root),
// in a process group stopped with the test. A test whose database is not
// installed skips, naming what to install, or fails under
// LEASEHOLD_REQUIRE_SERVERS=1, as CI runs (package missing). It starts
// processes only, with the standard library: the drivers stay in the
// modules that test with them.
package dbtest
