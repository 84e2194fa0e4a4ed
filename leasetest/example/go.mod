module example.com/warehouse

go 1.25.0

require (
	github.com/leasehold/leasehold v0.1.0
	github.com/leasehold/leasehold/leasetest v0.1.0
	github.com/redis/rueidis v1.0.79
	go.uber.org/goleak v1.3.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace (
	github.com/leasehold/leasehold => ../..
	github.com/leasehold/leasehold/leasetest => ..
)
