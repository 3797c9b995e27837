package queuetype

import (
	"errors"
	"fmt"
	"strconv"
)

var (
	// ErrNotFound means no job has the given id (it never existed or the
	// cleaner removed it).
	ErrNotFound = errors.New("queue: job not found")
	// ErrLeaseLost means a lease token no longer holds its job: the lease
	// expired and the job was rescued, the job was requeued, or it already
	// finished. The transition was not applied.
	ErrLeaseLost = errors.New("queue: lease lost")
	// ErrDuplicate means a job with the same queue and unique key already
	// holds the key; queue.Client.Enqueue returns that job along with this error.
	ErrDuplicate = errors.New("queue: duplicate job")
	// ErrJobFinished means the job already completed or failed, so it
	// cannot be cancelled.
	ErrJobFinished = errors.New("queue: job already finished")
	// ErrInvalidArgument is matched by *InvalidArgumentError.
	ErrInvalidArgument = errors.New("queue: invalid argument")
	// ErrClosed means the backend was closed.
	ErrClosed = errors.New("queue: backend closed")
)

// FieldPath says which field of a call's arguments broke a rule, in parts,
// so that a program can name it in its own words: the HTTP API calls
// specs[3].JobSpec.UniqueKey "jobs[3].unique_key". It is built where the
// rule is checked.
type FieldPath struct {
	// Batch names the list the argument is an element of, such as
	// "specs" for queue.Client.EnqueueBatch, and Index is the element's
	// position in it; Batch is empty when the argument came alone.
	Batch string
	Index int
	// Type is the argument's type, such as "JobSpec"; empty for a
	// parameter that is not a struct, such as a tenant name.
	Type string
	// Name is the field of Type, such as "UniqueKey", or the name of the
	// parameter, such as "tenant".
	Name string
}

// Field returns the path of field name of struct type typ, such as
// Field("JobSpec", "UniqueKey"); typ is empty for a plain parameter.
func Field(typ, name string) FieldPath { return FieldPath{Type: typ, Name: name} }

// At returns p as the field of element i of the list batch, such as
// specs[3].
func (p FieldPath) At(batch string, i int) FieldPath {
	p.Batch, p.Index = batch, i
	return p
}

// String writes the path with Go's names: "JobSpec.UniqueKey",
// "specs[3].JobSpec.UniqueKey", or "tenant" for a parameter.
func (p FieldPath) String() string {
	s := p.Name
	if p.Type != "" {
		s = p.Type + "." + s
	}
	if p.Batch != "" {
		s = p.Batch + "[" + strconv.Itoa(p.Index) + "]." + s
	}
	return s
}

// InvalidArgumentError names the field and the rule it broke. The rule
// names no other field by its Go name, so that a program that names the
// field in its own words (Path) can show the rule as it is.
type InvalidArgumentError struct {
	Field string    // such as "JobSpec.Queue": Path written out
	Rule  string    // such as "must not be empty"
	Path  FieldPath // the field in parts
}

func (e *InvalidArgumentError) Error() string {
	return "queue: " + e.Field + " " + e.Rule
}

// Is makes errors.Is(err, ErrInvalidArgument) true.
func (e *InvalidArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// InvalidArgument returns an *InvalidArgumentError for the field at p, so
// that every validation error reads the same (package queue and the
// stores build theirs with it).
func InvalidArgument(p FieldPath, format string, args ...any) *InvalidArgumentError {
	return &InvalidArgumentError{Field: p.String(), Rule: fmt.Sprintf(format, args...), Path: p}
}
