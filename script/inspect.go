package script

// Inspect is the script that reads one consistent snapshot of a lock of any
// kind, leasehold's or Redisson's, for operators' tools. It writes nothing.
var Inspect = load("inspect")
