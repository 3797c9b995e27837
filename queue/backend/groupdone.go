package backend

import (
	"encoding/json"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// CompletionJob returns the spec of the completion job of a group that is
// done with progress p, or false when its spec has no CompletionKind. Its
// UniqueKey is "group:" + the group id, so even a backend bug could not
// store it twice while it is unfinished.
func CompletionJob(p queuetype.GroupProgress) (queuetype.JobSpec, bool) {
	if p.CompletionKind == "" {
		return queuetype.JobSpec{}, false
	}
	s := queuetype.JobSpec{
		Queue: p.CompletionQueue, Kind: p.CompletionKind, Tenant: p.Tenant,
		Payload: p.CompletionPayload, UniqueKey: "group:" + p.ID, MaxAttempts: queuetype.DefaultMaxAttempts,
	}
	if s.Queue == "" {
		s.Queue = queuetype.DefaultCompletionQueue
	}
	if len(s.Payload) == 0 {
		s.Payload, _ = json.Marshal(queuetype.CompletionReport{
			Group: p.ID, Total: p.Total(), Completed: p.Completed, Failed: p.Failed,
			Cancelled: p.Cancelled, CancelRequested: p.CancelRequested,
		})
	}
	return s, true
}
