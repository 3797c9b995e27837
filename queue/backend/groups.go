package backend

import "github.com/sluicehq/sluice/queue"

// AddGroupCount adds n jobs in state st to the count of that state in p,
// so a store that reads a group's jobs by state fills its progress in one
// place. A state a group does not count is ignored.
func AddGroupCount(p *queue.GroupProgress, st queue.State, n int64) {
	switch st {
	case queue.StateScheduled:
		p.Scheduled += n
	case queue.StatePending:
		p.Pending += n
	case queue.StateWaiting:
		p.Waiting += n
	case queue.StateActive:
		p.Active += n
	case queue.StateRetrying:
		p.Retrying += n
	case queue.StateCompleted:
		p.Completed += n
	case queue.StateFailed:
		p.Failed += n
	case queue.StateCancelled:
		p.Cancelled += n
	case queue.StateBlocked:
		p.Blocked += n
	}
}
