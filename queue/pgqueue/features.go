package pgqueue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// capabilities are those of the Backend methods the store has; those of
// the parts (tenants, the tenant list, groups, flows, schedules, progress,
// the event log and the outbox, see features_extra.go) come with them.
var capabilities = queue.NewCapabilities(queue.CapUnique, queue.CapList, queue.CapCancelPending,
	queue.CapPriority, queue.CapDelay, queue.CapStrictOrder, queue.CapClockDelays, queue.CapAtomicBatch)

// Features implements backend.Backend.
func (s *Store) Features() backend.Features {
	f := backend.Features{
		Name:         "pgqueue",
		Capabilities: capabilities,
		Retry:        s,
		Tenants:      s,
		Notify:       s,
	}
	s.addFeatures(&f)
	return f
}
