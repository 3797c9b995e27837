package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// PauseIndefinitely is how long POST /v1/queues/{queue}/pause pauses a
// queue when the body names no duration: a hundred years
// (queue.MaxDuration, also the longest duration_ms), which is "until
// resumed" in practice. The queue API has pauses that end, not pauses that
// do not; a very long one reads the same everywhere (stats, dashboard).
const PauseIndefinitely = queue.MaxDuration

// handleRetryJob is POST /v1/jobs/{id}/retry: a failed or cancelled job
// runs again with fresh attempts (backend.Retrier).
func (s *Server) handleRetryJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.jobs.Retry(r.Context(), r.PathValue("id"))
	var nr *queue.NotRetryableError
	var de *queue.DuplicateError
	switch {
	case errors.As(err, &nr):
		writeProblem(w, &problem{Status: http.StatusConflict, Detail: strings.TrimPrefix(nr.Error(), "queue: ")}, nil)
		return
	case errors.As(err, &de):
		writeProblem(w, &problem{Status: http.StatusConflict, Detail: strings.TrimPrefix(de.Error(), "queue: ")}, nil)
		return
	case err != nil:
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobBody(j))
}

// pauseBody is the optional body of POST /v1/queues/{queue}/pause.
type pauseBody struct {
	// DurationMS is how long the pause lasts; absent or 0 pauses until
	// resumed (PauseIndefinitely).
	DurationMS int64 `json:"duration_ms"`
}

// queuePauseBody answers the pause and resume routes.
type queuePauseBody struct {
	Queue       string     `json:"queue"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

// handlePauseQueue is POST /v1/queues/{queue}/pause: workers lease
// nothing from the queue until the pause ends; running jobs go on. A
// later end already in force is kept.
func (s *Server) handlePauseQueue(w http.ResponseWriter, r *http.Request) {
	var body pauseBody
	if p := decodeJSON(r, &body, true); p != nil {
		writeProblem(w, p, nil)
		return
	}
	if p := pauseBound.check("duration_ms", body.DurationMS); p != nil {
		writeProblem(w, p, nil)
		return
	}
	d := time.Duration(body.DurationMS) * time.Millisecond
	if d == 0 {
		d = PauseIndefinitely
	}
	s.pauseQueue(w, r, d)
}

// handleResumeQueue is POST /v1/queues/{queue}/resume: a pause in force
// ends at once. Resuming a queue that is not paused changes nothing.
func (s *Server) handleResumeQueue(w http.ResponseWriter, r *http.Request) {
	s.pauseQueue(w, r, 0)
}

func (s *Server) pauseQueue(w http.ResponseWriter, r *http.Request, d time.Duration) {
	name := r.PathValue("queue")
	until, err := s.jobs.BackOff(r.Context(), queue.QueueScope(name), d)
	if err != nil {
		err = asField(err, queue.Field("Scope", "Name"), "queue") // the path's {queue}
		s.jobError(w, r, err)
		return
	}
	out := queuePauseBody{Queue: name}
	if d > 0 {
		out.Paused, out.PausedUntil = true, timePtr(until)
	}
	writeJSON(w, http.StatusOK, out)
}

// deliveryBody is one entry of the webhook delivery log in JSON.
type deliveryBody struct {
	Seq          int64   `json:"seq"`
	EventID      string  `json:"event_id"`
	EventType    string  `json:"event_type"`
	JobID        string  `json:"job_id,omitempty"`
	Group        string  `json:"group,omitempty"`
	Subscription string  `json:"subscription"`
	URL          string  `json:"url"`
	Attempt      int     `json:"attempt"`
	At           string  `json:"at"`
	Status       int     `json:"status"`
	LatencyMS    float64 `json:"latency_ms"`
	Error        string  `json:"error,omitempty"`
	Outcome      string  `json:"outcome"`
}

type deliveriesBody struct {
	Deliveries []deliveryBody `json:"deliveries"`
	Next       string         `json:"next,omitempty"`
}

func toDeliveryBody(d backend.Delivery) deliveryBody {
	return deliveryBody{
		Seq: d.Seq, EventID: d.EventID, EventType: string(d.EventType), JobID: d.JobID, Group: d.Group,
		Subscription: d.Subscription, URL: redactURL(d.URL), Attempt: d.Attempt, At: d.At.UTC().Format(time.RFC3339Nano),
		Status: d.Status, LatencyMS: float64(d.Latency.Microseconds()) / 1000, Error: d.Error, Outcome: string(d.Outcome),
	}
}

// redactURL drops the user info and the query of a receiver's URL: they
// often carry credentials, and whoever reads the log needs only where
// the request went.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func (s *Server) handleJobDeliveries(w http.ResponseWriter, r *http.Request) {
	s.deliveries(w, r, backend.DeliveryFilter{JobID: r.PathValue("id")})
}

func (s *Server) handleWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	s.deliveries(w, r, backend.DeliveryFilter{Subscription: r.PathValue("subscription")})
}

// deliveries answers one page of the delivery log, newest first, with
// ?limit (1 to 1000, default 100) and ?cursor (a previous page's next).
func (s *Server) deliveries(w http.ResponseWriter, r *http.Request, f backend.DeliveryFilter) {
	feat := s.backend.Features()
	ob := feat.Outbox
	if ob == nil {
		writeProblem(w, &problem{Status: http.StatusNotImplemented,
			Detail: feat.Name + " keeps no webhook delivery log"}, nil)
		return
	}
	q := r.URL.Query()
	f.Cursor = q.Get("cursor")
	if p := pageLimit(q, &f.Limit); p != nil {
		writeProblem(w, p, nil)
		return
	}
	page, err := ob.Deliveries(r.Context(), f)
	if err != nil {
		s.jobError(w, r, err)
		return
	}
	out := deliveriesBody{Deliveries: make([]deliveryBody, len(page.Deliveries)), Next: page.Next}
	for i, d := range page.Deliveries {
		out.Deliveries[i] = toDeliveryBody(d)
	}
	writeJSON(w, http.StatusOK, out)
}
