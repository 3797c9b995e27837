package backend

import "github.com/sluicehq/sluice/queue/queuetype"

// AddGroupCount adds n jobs in state st to the count of that state in p,
// so a store that reads a group's jobs by state fills its progress in one
// place. A state a group does not count is ignored.
func AddGroupCount(p *queuetype.GroupProgress, st queuetype.State, n int64) {
	switch st {
	case queuetype.StateScheduled:
		p.Scheduled += n
	case queuetype.StatePending:
		p.Pending += n
	case queuetype.StateWaiting:
		p.Waiting += n
	case queuetype.StateActive:
		p.Active += n
	case queuetype.StateRetrying:
		p.Retrying += n
	case queuetype.StateCompleted:
		p.Completed += n
	case queuetype.StateFailed:
		p.Failed += n
	case queuetype.StateCancelled:
		p.Cancelled += n
	case queuetype.StateBlocked:
		p.Blocked += n
	}
}
