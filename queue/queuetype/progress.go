package queuetype

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/queue/internal/handlerctx"
)

// MaxProgressBytes bounds a progress report: the JSON of its percent and
// data together, in bytes.
const MaxProgressBytes = 4 << 10

// JobProgress is how far a running job says it has got. A job keeps its
// latest progress after it ends.
type JobProgress struct {
	// Percent is from 0 to 100; nil when the job reports data only.
	Percent *float64 `json:"percent,omitempty"`
	// Data is a JSON object the handler chose (such as the pages crawled
	// so far); empty when the job reports a percent only.
	Data json.RawMessage `json:"data,omitempty"`
	// UpdatedAt is when the store recorded it (the backend's clock); set
	// by the backend.
	UpdatedAt time.Time `json:"updated_at"`
}

// WithData returns p with data, which must marshal to a JSON object, as
// its Data. A value that does not marshal leaves Data holding nothing
// valid, which Validate reports.
func (p JobProgress) WithData(data any) JobProgress {
	raw, err := json.Marshal(data)
	if err != nil {
		raw = []byte("!") // not JSON: Validate refuses it
	}
	p.Data = raw
	return p
}

// Validate returns an *InvalidArgumentError naming the field of p that
// breaks a rule: Percent from 0 to 100, Data a JSON object, and both
// together at most MaxProgressBytes of JSON; a report must carry at least
// one of them.
func (p JobProgress) Validate() error {
	if p.Percent == nil && len(p.Data) == 0 {
		return InvalidArgument(Field("JobProgress", "Percent"), "or Data must be set")
	}
	if p.Percent != nil {
		v := *p.Percent
		if math.IsNaN(v) || v < 0 || v > 100 {
			return InvalidArgument(Field("JobProgress", "Percent"), "must be from 0 to 100, got %v", v)
		}
	}
	if len(p.Data) > 0 {
		d := bytes.TrimSpace(p.Data)
		if !json.Valid(d) || len(d) == 0 || d[0] != '{' {
			return InvalidArgument(Field("JobProgress", "Data"), "must be a JSON object")
		}
	}
	if n := p.size(); n > MaxProgressBytes {
		return InvalidArgument(Field("JobProgress", "Data"), "must be at most %d bytes of JSON with the percent, got %d", MaxProgressBytes, n)
	}
	return nil
}

// size is the length of p's percent and data as JSON.
func (p JobProgress) size() int {
	n := len(p.Data)
	if p.Percent != nil {
		n += 24
	}
	return n
}

// ErrNotInHandler is returned by ReportProgress (and Job.ReportProgress)
// called with a context that is not a running handler's.
var ErrNotInHandler = errors.New("queue: progress reported outside a job handler")

// progressReporter is what a running handler's context carries (see
// package handlerctx): the job it runs and where its progress goes.
type progressReporter interface {
	LeasedJobID() string
	ReportProgress(ctx context.Context, p JobProgress) error
}

// ReportProgress is queue.ReportProgress for the job j, which must be the
// job whose handler ctx belongs to.
func (j *Job) ReportProgress(ctx context.Context, p JobProgress) error {
	l, ok := handlerctx.Value(ctx).(progressReporter)
	if !ok || l.LeasedJobID() != j.ID {
		return ErrNotInHandler
	}
	return l.ReportProgress(ctx, p)
}

// usageReporter is the running handler's lease as ReportUsage needs it
// (package queue's worker puts it in the handler's context).
type usageReporter interface {
	LeasedJobID() string
	ReportUsage(ctx context.Context, used map[string]budget.Cost) error
}

// ReportUsage is queue.ReportUsage for the job j, which must be the job
// whose handler ctx belongs to.
func (j *Job) ReportUsage(ctx context.Context, used map[string]budget.Cost) error {
	l, ok := handlerctx.Value(ctx).(usageReporter)
	if !ok || l.LeasedJobID() != j.ID {
		return ErrNotInHandler
	}
	return l.ReportUsage(ctx, used)
}
