package leaseholdotel

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/leasehold/leasehold/lease"
	"github.com/leasehold/leasehold/partition"
)

// groupKey names a partition group on its metrics: group names are few, so
// it is always there.
const groupKey = attribute.Key("leasehold.partition.group")

var groupStats = []stat[partition.Stats]{
	{"leasehold.partition.owned", "{partition}",
		"Partitions of the group whose fn runs now on this process's members.",
		upDown, func(s partition.Stats) int64 { return int64(s.Owned) }},
	{"leasehold.partition.assigned", "{partition}",
		"Partitions of the group assigned to this process's members: those owned, those whose last owner has yet to let go, and those whose fn returned nil.",
		upDown, func(s partition.Stats) int64 { return int64(s.Assigned) }},
	{"leasehold.partition.members", "{member}",
		"Members of the group at this member's last look; 0 while it is not a member.",
		gauge, func(s partition.Stats) int64 { return int64(s.Members) }},
	{"leasehold.partition.rebalances", "{rebalance}",
		"Changes of the group's assignment this process's members acted on.",
		counter, func(s partition.Stats) int64 { return int64(s.Rebalances) }},
}

// RegisterGroup reports g.Stats at each metric collection, without a round
// trip, until unregister is called: the partitions this member runs and is
// assigned, the members it sees and the rebalances it acted on, each with
// leasehold.partition.group, g.Name(). Several members of one group in a
// process add up, but for the members gauge. Only WithMeterProvider
// applies; on error nothing is registered.
func RegisterGroup(g *partition.Group, opts ...Option) (unregister func() error, err error) {
	if g == nil {
		return nil, fmt.Errorf("leaseholdotel: RegisterGroup: nil Group: %w", lease.ErrInvalid)
	}
	return register("RegisterGroup", newConfig(opts).meters.Meter(scope), groupStats, g.Stats, groupKey.String(g.Name()))
}
