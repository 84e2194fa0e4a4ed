module github.com/leasehold/leasehold

go 1.26.8

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/redis/rueidis v1.0.79
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.24.0
)

require golang.org/x/sys v0.47.0 // indirect
