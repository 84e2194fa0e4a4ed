package leasehold

import "testing"

// The server's identity decides what needs a version: Valkey reports a fixed
// redis_version for compatibility beside its own, so the name and version it
// reports as itself are read (a Valkey whose compatibility field said 6.x
// still has sharded pub/sub); Redis 6.2 has none.
func TestParseInfo(t *testing.T) {
	for _, tt := range []struct {
		name    string
		info    string
		server  string
		major   int
		sharded bool
	}{
		{"redis 7.0", "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", "redis", 7, true},
		{"redis 6.2", "# Server\r\nredis_version:6.2.16\r\n", "redis", 6, false},
		{"valkey 8", "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n", "valkey", 8, true},
		{"valkey, old compatibility field", "redis_version:6.0.0\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n", "valkey", 8, true},
		{"no version", "# Server\r\n", "redis", 0, false},
	} {
		s := parseInfo(tt.info)
		if s.name != tt.server || s.major != tt.major || s.shardedPubSub() != tt.sharded {
			t.Errorf("%s: %s %d sharded=%v, want %s %d sharded=%v", tt.name, s.name, s.major, s.shardedPubSub(), tt.server, tt.major, tt.sharded)
		}
	}
	r := parseInfo("role:slave\r\nmaster_host:10.0.0.1\r\nmaster_port:6380\r\nmaxmemory:1024\r\nmaxmemory_policy:volatile-lru\r\n")
	if r.role != "slave" || r.primary != "10.0.0.1:6380" || !r.evicts() || r.check("standalone", "10.0.0.2:6380") == nil {
		t.Errorf("replica with an evicting policy read as %+v", r)
	}
}
