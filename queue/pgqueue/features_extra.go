package pgqueue

import (
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// addFeatures adds to f the optional parts that depend on the options the
// store was opened with (the outbox, the event log), and those it always
// serves (progress, tenant secrets, schedules, groups, flows, the tenant
// list).
func (s *Store) addFeatures(f *backend.Features) {
	f.Progress, f.TenantSecrets, f.Schedules = s, s, s
	f.Groups, f.Flows, f.TenantList = s, s, s
	f.Capabilities = queue.NewCapabilities(append(f.Capabilities.List(), queue.CapGroups)...)
	if s.outbox {
		f.Outbox = s
	}
	if s.events {
		f.Events = s
	}
}
