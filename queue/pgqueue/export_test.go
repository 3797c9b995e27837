package pgqueue

import "time"

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
