package redisqueue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Features implements backend.Backend: every capability and every part on a
// single Redis (or Sentinel), the outbox only with Options.Outbox. On a
// Redis Cluster client it lacks queue.CapAtomicBatch and the tenant, tenant
// list and group parts (see the package doc): tenants and groups span
// queues, so their keys cannot live in one queue's slot.
func (b *Backend) Features() backend.Features {
	f := backend.Features{
		Name:         "redisqueue",
		Capabilities: queue.AllCapabilities,
		Retry:        b,
		Notify:       b,
		Schedules:    b,

		TenantSecrets: b,
	}
	if b.schedPrefix != "" {
		f.Tenants, f.TenantList, f.Groups, f.Flows = b, b, b, b
	}
	if b.cluster {
		f.Capabilities = f.Capabilities.Without(queue.CapAtomicBatch)
	}
	if b.outbox != "" {
		f.Outbox = b
	}
	f.Progress = b
	if b.events.key != "" {
		f.Events = b
	}
	return f
}
