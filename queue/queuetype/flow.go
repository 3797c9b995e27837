package queuetype

import "time"

// ParentFailure is what a job does when one of its parents fails for good
// or is cancelled (JobSpec.OnParentFailure).
type ParentFailure string

// The answers to a parent's failure.
const (
	// ParentFailureCancel cancels the job, and so its own dependents, in
	// the same step that ended the parent; the empty value means it.
	ParentFailureCancel ParentFailure = "cancel"
	// ParentFailureRun runs the job anyway once every parent has ended.
	ParentFailureRun ParentFailure = "run"
)

// Valid reports whether p is "", "cancel" or "run".
func (p ParentFailure) Valid() bool {
	return p == "" || p == ParentFailureCancel || p == ParentFailureRun
}

// Flow is a stored flow: its jobs, with their edges in each job's
// DependsOn, in dependency order.
type Flow struct {
	ID, Name string
	// CreatedAt is when the flow was enqueued.
	CreatedAt time.Time
	// Jobs are the flow's jobs still stored (the cleaner deletes finished
	// ones after their retention).
	Jobs []*Job
}

// Job returns the job of node name, or nil.
func (f *Flow) Job(name string) *Job {
	for _, j := range f.Jobs {
		if j.FlowNode == name {
			return j
		}
	}
	return nil
}

// JobRef names a job and where it is.
type JobRef struct {
	ID       string
	Queue    string
	Kind     string
	State    State
	FlowNode string
}

// ParentResult is a parent of a job, as its handler sees it.
type ParentResult struct {
	JobRef
	// Result is what the parent's handler returned, when it completed.
	Result []byte
	// Omitted is true when the result was left out to keep the job's
	// parents' results within MaxParentResults.
	Omitted bool
}

// Relatives are a job's parents and children.
type Relatives struct {
	// Parents are the jobs it depends on, results included up to
	// MaxParentResults in all.
	Parents []ParentResult
	// Children are the jobs that depend on it.
	Children []JobRef
}
