package sqlitequeue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Features implements backend.Backend: every capability and every part, the
// outbox only when the backend was opened with Options.Outbox.
func (b *Backend) Features() backend.Features {
	f := backend.Features{
		Name:         "sqlitequeue",
		Capabilities: queue.AllCapabilities,
		Tenants:      b,
		TenantList:   b,
		Groups:       b,
		Retry:        b,
		Notify:       b,
		Flows:        b,
		Schedules:    b,
		Progress:     b,

		TenantSecrets: b,
	}
	if b.events {
		f.Events = b
	}
	if b.outbox {
		f.Outbox = b
	}
	return f
}
