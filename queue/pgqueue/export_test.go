package pgqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlstore"
)

// SetLogPoll sets how often a blocked ReadEvents looks again without a
// notification, and returns the function that restores it.
func SetLogPoll(d time.Duration) (restore func()) {
	old := logPoll
	logPoll = d
	return func() { logPoll = old }
}

// ChannelName is the NOTIFY channel of a schema.
var ChannelName = channelName

// LeaseSQL returns the statement that starts a lease's transaction and
// the lease of one queue, as s sends them (parameters: queue, max, token
// prefix, lease until, worker, now).
func LeaseSQL(s *Store) (begin, lease string) { return asyncCommit, s.q.leaseOne }

// LeaseManySQL is LeaseSQL's lease of several queues (parameter 1 is a
// text array).
func LeaseManySQL(s *Store) string { return s.q.leaseMany }

// QuickLeaseSQL returns the quick leases of one queue and of several,
// with LeaseSQL's parameters.
func QuickLeaseSQL(s *Store) (one, many string) { return s.q.quickOne, s.q.quickMany }

// CompleteManySQL returns the statement that starts a batch of
// completions' transaction and the batch's completion of plain jobs
// (parameters: ids, tokens, results, now).
func CompleteManySQL(s *Store) (begin, complete string) { return completeConfig, s.q.completeMany }

// InsertOn runs the store's insert of specs, all without unique keys, on
// tx: the one-row statement for one spec, the batch statement for more.
func InsertOn(ctx context.Context, s *Store, tx pgx.Tx, specs []queue.JobSpec) error {
	now := s.now()
	jobs := make([]*queue.Job, len(specs))
	for i, sp := range specs {
		jobs[i] = sqlstore.NewJob(sp, now)
	}
	_, err := s.insertPlain(ctx, tx, jobs, now)
	return err
}

// PromoteSQL returns the promotion of one queue's due jobs (parameters:
// queue, now).
func PromoteSQL(s *Store) string { return s.q.promoteOne }
