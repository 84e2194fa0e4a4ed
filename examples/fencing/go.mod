module github.com/leasehold/leasehold/examples/fencing

go 1.25.0

replace github.com/leasehold/leasehold => ../..

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/leasehold/leasehold v0.1.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
