package queuetype

import (
	"encoding/json"
	"time"
)

// EventType names what happened to a job or group.
type EventType string

// The event types a backend's outbox records.
const (
	// EventJobCompleted: a job's handler succeeded (state completed).
	EventJobCompleted EventType = "job.completed"
	// EventJobFailed: a job failed for good (state failed): a permanent
	// error, its last attempt, or too many stalls.
	EventJobFailed EventType = "job.failed"
	// EventJobCancelled: a job ended cancelled, whether it had started
	// or not.
	EventJobCancelled EventType = "job.cancelled"
	// EventGroupCompleted: the last job of a group reached a final state.
	EventGroupCompleted EventType = "group.completed"
)

// EventTypes lists every event type.
var EventTypes = []EventType{EventJobCompleted, EventJobFailed, EventJobCancelled, EventGroupCompleted}

// Event is one thing that happened, as recorded in a backend's outbox. Its
// JSON form (the tags below) is the body webhooks deliver.
type Event struct {
	// ID is unique and never reused: receivers use it as an idempotency
	// key, since an event may be delivered more than once.
	ID string `json:"id"`
	// Type says what happened.
	Type EventType `json:"type"`
	// Time is when it happened (the backend's clock).
	Time time.Time `json:"created_at"`
	// JobID, Queue, Kind, Tenant and Group describe the job (Group alone
	// for group events).
	JobID  string `json:"job_id,omitempty"`
	Queue  string `json:"queue,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	Group  string `json:"group,omitempty"`
	// State is the job's final state.
	State State `json:"state,omitempty"`
	// Attempt is the number of attempts the job spent.
	Attempt int `json:"attempt,omitempty"`
	// Error is the job's last error, for failed and cancelled jobs.
	Error string `json:"error,omitempty"`
	// Data is extra JSON the transition attaches (a group's final counts,
	// for example); empty for job events.
	Data json.RawMessage `json:"data,omitempty"`
}
