package sqlstore

import (
	rules "github.com/sluicehq/sluice/internal/sched"
	"github.com/sluicehq/sluice/queue"
)

// GroupRow is a row of job_groups, as a dialect reads it.
type GroupRow struct {
	Spec            queue.GroupSpec
	Deadline        int64
	CreatedAt       int64
	CancelRequested bool
	DoneAt          int64
	CompletionJob   int64
	LastStart       int64
	PausedUntil     int64
	Gone            [3]int64 // completed, failed, cancelled jobs deleted (where kept)
}

// Limits is what the scheduler's decisions read of the group.
func (g *GroupRow) Limits() rules.GroupLimits {
	return rules.GroupLimits{MaxConcurrency: g.Spec.MaxConcurrency, MinInterval: g.Spec.MinInterval,
		PausedUntil: schedTime(g.PausedUntil), LastStart: schedTime(g.LastStart)}
}

// BlockedUntil is when the group may start a job again: the end of a
// pause, or its last start plus its interval (0: now).
func (g *GroupRow) BlockedUntil() int64 { return schedNanos(g.Limits().BlockedUntil()) }

// Closed reports whether the group takes no more jobs: its cancel was
// asked for, or it is done.
func (g *GroupRow) Closed() bool { return g.CancelRequested || g.DoneAt > 0 }
