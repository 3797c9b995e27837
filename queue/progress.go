package queue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/queue/internal/handlerctx"
)

// ProgressEvery is how often, at most, a running job's progress is
// written to the store: reports made faster than that are coalesced, and
// the latest one is written when the interval ends or the attempt ends.
const ProgressEvery = 250 * time.Millisecond

// Percent returns a progress report of p percent (0 to 100).
func Percent(p float64) JobProgress { return JobProgress{Percent: &p} }

// ReportProgress records p as the progress of the job whose handler ctx
// belongs to. Reports are coalesced: at most one is written per
// ProgressEvery per job, the latest always lands (when the interval ends,
// or before the attempt's outcome is written), so a handler may call it in
// a tight loop. It returns an *InvalidArgumentError for a bad report,
// ErrNotInHandler outside a handler, an error matching ErrUnsupported when
// the backend does not record progress, ErrLeaseLost once the job is no
// longer held, and a store fault of the write it made, if it made one (a
// coalesced report returns nil; its write's fault is logged).
func ReportProgress(ctx context.Context, p JobProgress) error {
	l, ok := handlerctx.Value(ctx).(*jobLease)
	if !ok {
		return ErrNotInHandler
	}
	return l.ReportProgress(ctx, p)
}

// LeasedJobID returns the ID of the job l holds.
func (l *jobLease) LeasedJobID() string { return l.id }

// ReportProgress validates p and hands it to the job's progress writer.
func (l *jobLease) ReportProgress(ctx context.Context, p JobProgress) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return l.progress.report(ctx, p)
}
