// Package queuetype holds the queue's data types, shared by package queue
// (its users) and package queue/backend (the contract a store implements):
// Job, JobSpec, Lease, State, TenantConfig, GroupProgress, the errors a
// store returns and the validation of what it stores.
//
// It exists so that queue can name backend.Backend while the contract names
// these types without importing queue. Package queue re-exports every name
// here (queue.Job is queuetype.Job, queue.ErrNotFound is
// queuetype.ErrNotFound), and user code should write those: this package is
// a leaf that only the queue's own packages and stores need to import.
package queuetype
