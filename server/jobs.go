package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// MaxBatch is the most jobs one POST /v1/jobs/batch may hold.
const MaxBatch = 1000

// jobSpecBody is a job to enqueue, in JSON.
type jobSpecBody struct {
	Queue string `json:"queue"`
	Kind  string `json:"kind"`
	// Payload is any JSON value, handed to the worker as is.
	Payload json.RawMessage `json:"payload,omitempty"`
	Tenant  string          `json:"tenant,omitempty"`
	Group   string          `json:"group,omitempty"`
	// Priority: lower runs first; default 0.
	Priority int `json:"priority,omitempty"`
	// RunAt (RFC 3339) or DelayMS delays the job, at most 100 years.
	// RunAt is read here rather than by encoding/json, so a bad one is
	// refused in the API's words.
	RunAt       *string `json:"run_at,omitempty"`
	DelayMS     int64   `json:"delay_ms,omitempty"`
	MaxAttempts int     `json:"max_attempts,omitempty"`
	TimeoutMS   int64   `json:"timeout_ms,omitempty"`
	UniqueKey   string  `json:"unique_key,omitempty"`
	UniqueForMS int64   `json:"unique_for_ms,omitempty"`
	// DependsOn and OnParentFailure: see queue.JobSpec (flows.go).
	DependsOn       []string `json:"depends_on,omitempty"`
	OnParentFailure string   `json:"on_parent_failure,omitempty"`
	// Webhook receives the job's events (see docs/webhooks.md).
	Webhook *queue.Webhook `json:"webhook,omitempty"`
}

// spec turns the body into a JobSpec; path prefixes the fields named in a
// problem ("jobs[3]" in a batch). Queue's own rules (ValidateSpec) are
// checked by the Client; these are the API's: its units and its times.
func (b jobSpecBody) spec(now time.Time, path string) (queue.JobSpec, *problem) {
	s := queue.JobSpec{
		Queue: b.Queue, Kind: b.Kind, Payload: b.Payload, Tenant: b.Tenant, Group: b.Group,
		Priority: b.Priority, MaxAttempts: b.MaxAttempts, UniqueKey: b.UniqueKey, Webhook: b.Webhook,
		DependsOn: b.DependsOn, OnParentFailure: queue.ParentFailure(b.OnParentFailure),
	}
	var p *problem
	if s.Timeout, p = millis(joinPath(path, "timeout_ms"), b.TimeoutMS); p != nil {
		return s, p
	}
	if s.UniqueFor, p = millis(joinPath(path, "unique_for_ms"), b.UniqueForMS); p != nil {
		return s, p
	}
	delay, p := millis(joinPath(path, "delay_ms"), b.DelayMS)
	switch {
	case p != nil:
		return s, p
	case b.RunAt != nil && b.DelayMS != 0:
		return s, badRequest("%s and %s must not both be set", joinPath(path, "run_at"), joinPath(path, "delay_ms"))
	case b.RunAt != nil:
		t, err := time.Parse(time.RFC3339, *b.RunAt)
		if err != nil {
			return s, badRequest("%s must be RFC 3339 (such as 2030-01-02T15:04:05Z), got %q", joinPath(path, "run_at"), clip(*b.RunAt))
		}
		s.RunAt = t
	case delay > 0:
		s.RunAt = now.Add(delay)
	}
	return s, nil
}

// jobBody is a stored job in JSON.
type jobBody struct {
	ID              string               `json:"id"`
	Queue           string               `json:"queue"`
	Kind            string               `json:"kind"`
	State           queue.State          `json:"state"`
	Payload         json.RawMessage      `json:"payload,omitempty"`
	PayloadBase64   string               `json:"payload_base64,omitempty"`
	Tenant          string               `json:"tenant,omitempty"`
	Group           string               `json:"group,omitempty"`
	Priority        int                  `json:"priority"`
	Attempt         int                  `json:"attempt"`
	MaxAttempts     int                  `json:"max_attempts"`
	Stalls          int                  `json:"stalls,omitempty"`
	TimeoutMS       int64                `json:"timeout_ms,omitempty"`
	UniqueKey       string               `json:"unique_key,omitempty"`
	LastError       string               `json:"last_error,omitempty"`
	Errors          []queue.AttemptError `json:"errors,omitempty"`
	Result          json.RawMessage      `json:"result,omitempty"`
	ResultBase64    string               `json:"result_base64,omitempty"`
	CancelRequested bool                 `json:"cancel_requested,omitempty"`
	WorkerID        string               `json:"worker_id,omitempty"`
	LeaseUntil      *time.Time           `json:"lease_until,omitempty"`
	RunAt           *time.Time           `json:"run_at,omitempty"`
	CreatedAt       time.Time            `json:"created_at"`
	UpdatedAt       time.Time            `json:"updated_at"`
	StartedAt       *time.Time           `json:"started_at,omitempty"`
	FinishedAt      *time.Time           `json:"finished_at,omitempty"`
	// Webhook is the job's own webhook, its header values redacted.
	Webhook *queue.Webhook `json:"webhook,omitempty"`
	// TraceParent and TraceState are the trace context stored with the
	// job, for a worker to continue the enqueuing call's trace.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	flowFields
	// Progress is the latest progress the job's handler reported.
	Progress *queue.JobProgress `json:"progress,omitempty"`
	// Hold says which budget holds a waiting job and when it expects
	// room (budgetjobs.go); only on GET /v1/jobs/{id}.
	Hold *holdBody `json:"hold,omitempty"`
}

func toJobBody(j *queue.Job) jobBody {
	b := jobBody{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, State: j.State, Tenant: j.Tenant, Group: j.Group,
		Priority: j.Priority, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Stalls: j.Stalls,
		TimeoutMS: j.Timeout.Milliseconds(), UniqueKey: j.UniqueKey, LastError: j.LastError, Errors: j.Errors,
		CancelRequested: j.CancelRequested, WorkerID: j.WorkerID, LeaseUntil: timePtr(j.LeaseUntil),
		RunAt: timePtr(j.RunAt), CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		StartedAt: timePtr(j.StartedAt), FinishedAt: timePtr(j.FinishedAt), Progress: j.Progress,
	}
	b.Payload, b.PayloadBase64 = rawOrBase64(j.Payload)
	b.Result, b.ResultBase64 = rawOrBase64(j.Result)
	b.Webhook = redactHook(j.Webhook)
	b.TraceParent, b.TraceState = splitTrace(j.Trace)
	b.flowFields = toFlowFields(j)
	return b
}

// rawOrBase64 passes JSON through as JSON; anything else (a payload a Go
// producer enqueued as bytes) as base64, so no byte is lost.
func rawOrBase64(b []byte) (json.RawMessage, string) {
	if len(b) == 0 {
		return nil, ""
	}
	if json.Valid(b) {
		return json.RawMessage(b), ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

type enqueuedBody struct {
	Job       jobBody `json:"job"`
	Duplicate bool    `json:"duplicate"`
}

// jobError maps queue errors to problems; unknown faults are logged and
// answered without their text, which may name internals.
func (s *Server) jobError(w http.ResponseWriter, r *http.Request, err error) {
	var p *problem
	switch {
	case errors.Is(err, queue.ErrInvalidArgument):
		p = badRequest("%s", invalidDetail(err))
	case errors.Is(err, queue.ErrNotFound):
		p = notFound("unknown job %q", clip(r.PathValue("id")))
	case errors.Is(err, queue.ErrGroupNotFound):
		p = notFound("unknown group %q", clip(r.PathValue("group")))
	case errors.Is(err, queue.ErrGroupExists):
		p = &problem{Status: http.StatusConflict, Detail: "a group with this id already exists (a job that names a group creates it: create a group before its jobs)"}
	case errors.Is(err, queue.ErrGroupClosed):
		p = &problem{Status: http.StatusConflict, Detail: "the job's group is done or cancelled: nothing was stored"}
	case errors.Is(err, queue.ErrNotEnforced):
		p = badRequest("%s", notEnforcedDetail(err)) // enforce.go
	case errors.Is(err, queue.ErrUnsupported):
		p = &problem{Status: http.StatusNotImplemented, Detail: unsupportedDetail(err)}
	case errors.Is(err, queue.ErrLeaseLost):
		p = &problem{Status: http.StatusConflict, Detail: "lease lost: the job was rescued, requeued or finished, or the token is wrong; drop the job"}
	case errors.Is(err, queue.ErrJobFinished):
		p = &problem{Status: http.StatusConflict, Detail: "job already finished"}
	case isOverloaded(err):
		w.Header().Set("Retry-After", strconv.FormatInt(int64(retryAfterOf(err).Seconds()+0.999), 10))
		p = &problem{Status: http.StatusServiceUnavailable, Detail: strings.TrimPrefix(err.Error(), "queue: ")}
	case errors.Is(err, queue.ErrClosed), errors.Is(err, errNoQueue):
		w.Header().Set("Retry-After", "1")
		p = &problem{Status: http.StatusServiceUnavailable, Detail: "job queue unavailable"}
	default:
		s.logFault(r.Context(), slog.LevelError, "server: job store fault", "route", r.Pattern, "error", err)
		w.Header().Set("Retry-After", "1")
		p = &problem{Status: http.StatusServiceUnavailable, Detail: "job store unavailable, retry later"}
	}
	writeProblem(w, p, nil)
}

// invalidDetail says what was wrong in the API's own field names.
func invalidDetail(err error) string {
	var ia *queue.InvalidArgumentError
	if errors.As(err, &ia) && ia.Path != (queue.FieldPath{}) {
		return apiField(ia.Path) + " " + ia.Rule
	}
	return strings.TrimPrefix(err.Error(), "queue: ")
}

// unsupportedDetail says what the backend lacks, naming the job field that
// asked for it in the API's words.
func unsupportedDetail(err error) string {
	var ue *queue.UnsupportedError
	if errors.As(err, &ue) && ue.Path != (queue.FieldPath{}) {
		return fmt.Sprintf("%s does not support %s (%s is set)", ue.Backend, ue.Feature, apiField(ue.Path))
	}
	return strings.TrimPrefix(err.Error(), "queue: ")
}

func (s *Server) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	var body jobSpecBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	spec, p := body.spec(s.now(), "")
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	specs := []queue.JobSpec{spec}
	s.specDefaults(specs)
	ctx := s.prepareEnqueue(r, specs) // jobhooks.go
	res, err := s.jobs.EnqueueBatch(ctx, specs)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	s.countEnqueued(res)
	status := http.StatusCreated
	if res[0].Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, enqueuedBody{Job: toJobBody(res[0].Job), Duplicate: res[0].Duplicate})
}

// batchBody is read job by job (decodePart), so a problem names the job.
type batchBody struct {
	Jobs []json.RawMessage `json:"jobs"`
}

type batchResult struct {
	Jobs []enqueuedBody `json:"jobs"`
}

func (s *Server) handleEnqueueBatch(w http.ResponseWriter, r *http.Request) {
	var body batchBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	if len(body.Jobs) == 0 || len(body.Jobs) > MaxBatch {
		writeProblem(w, badRequest("jobs must hold 1 to %d jobs, got %d", MaxBatch, len(body.Jobs)), nil)
		return
	}
	now := s.now()
	specs := make([]queue.JobSpec, len(body.Jobs))
	for i, raw := range body.Jobs {
		var b jobSpecBody
		path := fmt.Sprintf("jobs[%d]", i)
		p := decodePart(raw, &b, path)
		if p == nil {
			specs[i], p = b.spec(now, path)
		}
		if p != nil {
			writeProblem(w, p, nil)
			return
		}
	}
	s.specDefaults(specs)
	ctx := s.prepareEnqueue(r, specs) // jobhooks.go
	res, err := s.jobs.EnqueueBatch(ctx, specs)
	var partial *queue.PartialError
	if errors.As(err, &partial) {
		s.partialBatch(w, r, partial)
		return
	}
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	s.countEnqueued(res)
	out := batchResult{Jobs: make([]enqueuedBody, len(res))}
	for i, e := range res {
		out.Jobs[i] = enqueuedBody{Job: toJobBody(e.Job), Duplicate: e.Duplicate}
	}
	writeJSON(w, http.StatusCreated, out)
}

// partialProblem is the answer to a batch over queues on several backends
// that one backend stored before another failed: the stored jobs are
// listed by position, so a client resends only the rest instead of
// duplicating them.
type partialProblem struct {
	problem
	Stored []partialStored `json:"stored"`
}

type partialStored struct {
	Index     int    `json:"index"`
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

func (s *Server) partialBatch(w http.ResponseWriter, r *http.Request, e *queue.PartialError) {
	s.log.ErrorContext(r.Context(), "server: batch stored in part", "route", r.Pattern, "error", e)
	s.countEnqueued(slices.DeleteFunc(slices.Clone(e.Results), func(x queue.Enqueued) bool { return x.Job == nil }))
	body := partialProblem{problem: problem{
		Title: http.StatusText(http.StatusServiceUnavailable), Status: http.StatusServiceUnavailable,
		Detail: "part of the batch was stored, then a job store failed: resend only the jobs not listed in stored",
	}}
	for i, x := range e.Results {
		if x.Job != nil {
			body.Stored = append(body.Stored, partialStored{Index: i, ID: x.Job.ID, Duplicate: x.Duplicate})
		}
	}
	w.Header().Set("Retry-After", "1")
	writeProblem(w, &body.problem, body)
}

func (s *Server) countEnqueued(res []queue.Enqueued) {
	for _, e := range res {
		if !e.Duplicate {
			s.metrics.enqueued.WithLabelValues(e.Job.Queue, e.Job.Tenant).Inc()
			s.metrics.activity.JobEnqueued(e.Job.Queue, 1)
		}
	}
}

func (s *Server) handleGetJob(w http.ResponseWriter, r *http.Request) {
	if d, p := waitParam(r); p != nil {
		writeProblem(w, p, nil)
		return
	} else if d > 0 {
		s.getJobWaiting(w, r, d) // wait.go
		return
	}
	j, err := s.jobs.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	b := s.withRelatives(r.Context(), j)
	b.Hold = s.holdOf(j)
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.jobs.Cancel(r.Context(), r.PathValue("id"))
	if err != nil && !(errors.Is(err, queue.ErrJobFinished) && j != nil) {
		s.jobError(w, r, err)
		return
	}
	if err != nil { // finished: say so, with the job as it is
		writeProblem(w, &problem{Status: http.StatusConflict, Detail: fmt.Sprintf("job %q already finished (%s)", j.ID, j.State)}, nil)
		return
	}
	writeJSON(w, http.StatusOK, toJobBody(j))
}

type listBody struct {
	Jobs []jobBody `json:"jobs"`
	Next string    `json:"next,omitempty"`
}

func (s *Server) handleListJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := queue.ListFilter{
		Queue: q.Get("queue"), Tenant: q.Get("tenant"), Kind: q.Get("kind"), Group: q.Get("group"),
		Order: queue.ListOrder(q.Get("order")), Cursor: q.Get("cursor"),
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if !queue.State(st).Valid() {
				writeProblem(w, badRequest("unknown state %q (states: %s)", clip(st), stateNames()), nil)
				return
			}
			f.States = append(f.States, queue.State(st))
		}
	}
	if p := pageLimit(q, &f.Limit); p != nil {
		writeProblem(w, p, nil)
		return
	}
	page, err := s.jobs.List(r.Context(), f)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	out := listBody{Jobs: make([]jobBody, len(page.Jobs)), Next: page.Next}
	for i, j := range page.Jobs {
		out.Jobs[i] = toJobBody(j)
	}
	writeJSON(w, http.StatusOK, out)
}

// pageLimit reads the limit query parameter of a listing into limit (left
// as is when absent): 1 to queue.MaxListLimit.
func pageLimit(q url.Values, limit *int) *problem {
	v := q.Get("limit")
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > queue.MaxListLimit {
		return badRequest("limit must be an integer from 1 to %d, got %q", queue.MaxListLimit, clip(v))
	}
	*limit = n
	return nil
}

func stateNames() string {
	names := make([]string, len(queue.States))
	for i, s := range queue.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

type statsBody struct {
	Queues []queueStatsBody `json:"queues"`
}

type queueStatsBody struct {
	Queue  string                `json:"queue"`
	Counts map[queue.State]int64 `json:"counts"`
	Total  int64                 `json:"total"`
	// PausedUntil is the end of a pause in force (POST
	// /v1/queues/{queue}/pause), when the backend reports it.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	stats, err := s.jobs.Stats(r.Context())
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	out := statsBody{Queues: []queueStatsBody{}}
	for _, st := range stats {
		b := queueStatsBody{Queue: st.Queue, Counts: map[queue.State]int64{}, PausedUntil: timePtr(st.PausedUntil)}
		for _, state := range queue.States {
			b.Counts[state] = st.Counts[state]
			b.Total += st.Counts[state]
		}
		out.Queues = append(out.Queues, b)
	}
	writeJSON(w, http.StatusOK, out)
}
