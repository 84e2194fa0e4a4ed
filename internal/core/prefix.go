package core

// Key is lock name's name in Redis, from which its keys and channels are
// derived: the Client's key prefix, then name (leasehold.WithKeyPrefix).
// Errors, leases and events keep name.
func (o Options) Key(name string) string { return o.KeyPrefix + name }
