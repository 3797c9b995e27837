package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/budget"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Worker protocol limits.
const (
	// MaxLeaseWait bounds a lease long-poll.
	MaxLeaseWait = 60 * time.Second
	// MaxLeaseBatch bounds how many jobs one lease call hands out.
	MaxLeaseBatch = 100
	// leasePoll is how often a long-poll retries when the backend cannot
	// notify it of new work.
	leasePoll = 200 * time.Millisecond
)

// retryAfterError is an error that says when to retry, such as the
// queue's overload error.
type retryAfterError interface {
	error
	RetryAfter() time.Duration
}

func isOverloaded(err error) bool {
	var ra retryAfterError
	return errors.Is(err, queue.ErrOverloaded) || errors.As(err, &ra)
}

func retryAfterOf(err error) time.Duration {
	var ra retryAfterError
	if errors.As(err, &ra) {
		return max(ra.RetryAfter(), time.Second)
	}
	return time.Second
}

type leaseRequestBody struct {
	Queues   []string `json:"queues"`
	WorkerID string   `json:"worker_id"`
	// Max jobs to lease, from 1 to MaxLeaseBatch; absent means 1.
	Max *int `json:"max"`
	// LeaseMS is the lease length; default the config's queues.lease.
	LeaseMS int64 `json:"lease_ms"`
	// WaitMS long-polls up to this long for work; default 0 (answer at
	// once), at most MaxLeaseWait.
	WaitMS int64 `json:"wait_ms"`
}

type leaseBody struct {
	Job   jobBody `json:"job"`
	Token string  `json:"token"`
}

type leasesBody struct {
	Leases []leaseBody `json:"leases"`
}

func (b *leaseRequestBody) check(defaultLease time.Duration) (backend.LeaseRequest, time.Duration, *problem) {
	req := backend.LeaseRequest{Queues: b.Queues, WorkerID: b.WorkerID, Max: 1}
	switch {
	case len(b.Queues) == 0:
		return req, 0, badRequest("queues must name at least one queue")
	case b.WorkerID == "":
		return req, 0, badRequest("worker_id is required")
	}
	if b.Max != nil {
		if p := fieldBounds["max"].check("max", int64(*b.Max)); p != nil {
			return req, 0, p
		}
		req.Max = *b.Max
	}
	if p := fieldBounds["wait_ms"].check("wait_ms", b.WaitMS); p != nil {
		return req, 0, p
	}
	var p *problem
	if req.LeaseFor, p = millis("lease_ms", b.LeaseMS); p != nil {
		return req, 0, p
	}
	if req.LeaseFor == 0 {
		req.LeaseFor = defaultLease
	}
	if err := req.Validate(); err != nil {
		return req, 0, badRequest("%s", leaseDetail(err))
	}
	return req, time.Duration(b.WaitMS) * time.Millisecond, nil
}

// leaseDetail words a refused backend.LeaseRequest with the API's names:
// queues[3] for LeaseRequest.Queues[3], worker_id for WorkerID.
func leaseDetail(err error) string {
	var ia *queue.InvalidArgumentError
	if !errors.As(err, &ia) || ia.Path.Type != "LeaseRequest" {
		return strings.TrimPrefix(err.Error(), "queue: ")
	}
	name := ia.Path.Name
	for goName, api := range map[string]string{"Queues": "queues", "WorkerID": "worker_id", "Max": "max", "LeaseFor": "lease_ms"} {
		if rest, ok := strings.CutPrefix(name, goName); ok {
			name = api + rest
			break
		}
	}
	return name + " " + ia.Rule
}

func (s *Server) handleLease(w http.ResponseWriter, r *http.Request) {
	var body leaseRequestBody
	if p := decodeJSON(r, &body, false); p != nil {
		writeProblem(w, p, nil)
		return
	}
	req, wait, p := body.check(s.leaseFor(body.Queues))
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	leases, err := s.leaseJobs(r.Context(), req, wait, body.LeaseMS != 0)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	if err := queue.WithParents(r.Context(), s.jobs.Backend(), leases); err != nil {
		s.log.WarnContext(r.Context(), "server: read parents' results", "error", err)
	}
	out := leasesBody{Leases: make([]leaseBody, len(leases))}
	for i, l := range leases {
		s.metrics.jobStarted(l.Job)
		out.Leases[i] = leaseBody{Job: toJobBody(l.Job), Token: l.Token}
	}
	writeJSON(w, http.StatusOK, out)
}

// leaseWaiter long-polls a backend: it leases at once when work is ready,
// else waits for the backend's notification (when it has one) or a short
// poll interval, until the wait ends or the client goes away.
type leaseWaiter struct {
	b        backend.Backend
	notifier backend.Notifier
	stopping chan struct{} // closed at shutdown: long-polls answer at once
	once     sync.Once
}

func newLeaseWaiter(b backend.Backend) *leaseWaiter {
	return &leaseWaiter{b: b, notifier: b.Features().Notify, stopping: make(chan struct{})}
}

func (lw *leaseWaiter) close() { lw.once.Do(func() { close(lw.stopping) }) }

func (lw *leaseWaiter) lease(ctx context.Context, req backend.LeaseRequest, wait time.Duration) ([]queue.Lease, error) {
	deadline := time.Now().Add(wait)
	var wake <-chan struct{}
	if lw.notifier != nil && wait > 0 {
		ch, stop := lw.notifier.Subscribe(req.Queues)
		defer stop()
		wake = ch
	}
	for {
		leases, err := lw.b.Lease(ctx, req)
		if err != nil || len(leases) > 0 {
			return leases, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		t := time.NewTimer(min(left, leasePoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil // the client left: nothing leased
		case <-lw.stopping:
			t.Stop()
			return nil, nil // shutting down: answer empty, the worker retries elsewhere
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

type heartbeatBody struct {
	Token   string `json:"token"`
	LeaseMS int64  `json:"lease_ms"`
}

type heartbeatResult struct {
	LeaseUntil      time.Time `json:"lease_until"`
	CancelRequested bool      `json:"cancel_requested"`
}

func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	var body heartbeatBody
	if !decodeTokenBody(w, r, &body) {
		return
	}
	d, p := millis("lease_ms", body.LeaseMS)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	if d == 0 {
		d = s.heartbeatLease(r.Context(), r.PathValue("id"))
	}
	st, err := s.backend.Extend(r.Context(), r.PathValue("id"), body.Token, d)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, heartbeatResult{LeaseUntil: st.Until, CancelRequested: st.CancelRequested})
}

// tokenBody is a worker-protocol request body: it carries a lease token.
type tokenBody interface{ leaseToken() string }

func (b *heartbeatBody) leaseToken() string { return b.Token }
func (b *completeBody) leaseToken() string  { return b.Token }
func (b *failBody) leaseToken() string      { return b.Token }
func (b *requeueBody) leaseToken() string   { return b.Token }

// decodeTokenBody decodes a worker-protocol body and requires its lease
// token; when either fails it writes the problem and returns false.
func decodeTokenBody(w http.ResponseWriter, r *http.Request, body tokenBody) bool {
	if p := decodeJSON(r, body, false); p != nil {
		writeProblem(w, p, nil)
		return false
	}
	if body.leaseToken() == "" {
		writeProblem(w, badRequest("token is required: the lease token the job was leased with"), nil)
		return false
	}
	return true
}

type completeBody struct {
	Token  string          `json:"token"`
	Result json.RawMessage `json:"result"`
	// Usage is what the job really used of its budgets, by budget and
	// unit: its ticket is settled with it (budgetjobs.go).
	Usage map[string]budget.Cost `json:"usage"`
}

type stateBody struct {
	ID    string      `json:"id"`
	State queue.State `json:"state"`
}

func (s *Server) handleComplete(w http.ResponseWriter, r *http.Request) {
	var body completeBody
	if !decodeTokenBody(w, r, &body) {
		return
	}
	id := r.PathValue("id")
	job := s.peekJob(r.Context(), id)
	err := s.backend.Complete(r.Context(), id, body.Token, body.Result)
	s.settleOnEnd(r.Context(), id, body.Token, body.Usage, err)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	s.ended(job, queue.StateCompleted)
	writeJSON(w, http.StatusOK, stateBody{ID: id, State: queue.StateCompleted})
}

type failBody struct {
	Token     string `json:"token"`
	Error     string `json:"error" text:"any"` // free text, made storable
	RetryInMS int64  `json:"retry_in_ms"`
	Permanent bool   `json:"permanent"`
	// Usage is what the attempt really used of its budgets (see
	// completeBody).
	Usage map[string]budget.Cost `json:"usage"`
}

func (s *Server) handleFail(w http.ResponseWriter, r *http.Request) {
	var body failBody
	if !decodeTokenBody(w, r, &body) {
		return
	}
	if body.Error == "" {
		writeProblem(w, badRequest("error is required: say why the attempt failed"), nil)
		return
	}
	retry, p := millis("retry_in_ms", body.RetryInMS)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	body.Error = queue.StorableError(body.Error)
	id := r.PathValue("id")
	job := s.peekJob(r.Context(), id)
	if retry == 0 && job != nil {
		retry = s.retryIn(job)
	}
	st, err := s.backend.Fail(r.Context(), id, body.Token, backend.Failure{Error: body.Error, RetryIn: retry, Permanent: body.Permanent})
	s.settleOnEnd(r.Context(), id, body.Token, body.Usage, err)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	s.ended(job, st)
	writeJSON(w, http.StatusOK, stateBody{ID: id, State: st})
}

type requeueBody struct {
	Token   string `json:"token"`
	DelayMS int64  `json:"delay_ms"`
}

// handleRequeue gives a job back without spending its attempt: at once
// (a worker shutting down) or after delay_ms (snooze).
func (s *Server) handleRequeue(w http.ResponseWriter, r *http.Request) {
	var body requeueBody
	if !decodeTokenBody(w, r, &body) {
		return
	}
	delay, p := millis("delay_ms", body.DelayMS)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	id := r.PathValue("id")
	var (
		st  queue.State
		err error
	)
	if delay > 0 {
		st, err = s.backend.Snooze(r.Context(), id, body.Token, delay)
	} else {
		st, err = s.backend.Requeue(r.Context(), id, body.Token)
	}
	s.settleOnEnd(r.Context(), id, body.Token, nil, err)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, stateBody{ID: id, State: st})
}

// peekJob reads a job for metrics before it changes; nil when it cannot.
func (s *Server) peekJob(ctx context.Context, id string) *queue.Job {
	j, err := s.backend.Get(ctx, id)
	if err != nil {
		return nil
	}
	return j
}

func (s *Server) ended(j *queue.Job, st queue.State) {
	if j != nil {
		s.metrics.jobEnded(j, st, s.now())
	}
}
