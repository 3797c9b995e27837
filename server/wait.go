package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// MaxWait bounds the long-poll of GET /v1/jobs/{id}?wait= and
// GET /v1/groups/{group}?wait=.
const MaxWait = 60 * time.Second

// waitParam reads the wait query parameter: a Go duration ("30s",
// "1500ms") or whole seconds ("30"), from 0 to MaxWait. Zero (or absent)
// answers at once.
func waitParam(r *http.Request) (time.Duration, *problem) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.ParseUint(v, 10, 32)
		if nerr != nil {
			return 0, badRequest("wait must be a duration such as 30s or a number of seconds, got %q", clip(v))
		}
		d = time.Duration(n) * time.Second
	}
	switch {
	case d < 0:
		return 0, badRequest("wait must not be negative, got %q", clip(v))
	case d > MaxWait:
		return 0, badRequest("wait must be at most %s, got %q", MaxWait, clip(v))
	}
	return d, nil
}

// waited reports whether err only says that the wait ended first: the
// caller then answers with what was last read.
func waited(r *http.Request, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil
}

// getJobWaiting answers GET /v1/jobs/{id} with wait: at once when the job
// is final, else when it becomes final or the wait ends, with the job as
// it is then. Waits share one reader of the store (queue.Client.Wait).
func (s *Server) getJobWaiting(w http.ResponseWriter, r *http.Request, d time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	ctx = s.stopOnShutdown(ctx)
	j, err := s.jobs.Wait(ctx, r.PathValue("id"))
	if err != nil && !(j != nil && (waited(r, err) || errors.Is(err, context.Canceled) && r.Context().Err() == nil)) {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toJobBody(j))
}

// getGroupWaiting is getJobWaiting for a group: it answers once the group
// is over (queue.GroupFinal) or the wait ends.
func (s *Server) getGroupWaiting(w http.ResponseWriter, r *http.Request, d time.Duration) {
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	ctx = s.stopOnShutdown(ctx)
	g, err := s.jobs.WaitGroup(ctx, r.PathValue("group"))
	if err != nil && !(g != nil && (waited(r, err) || errors.Is(err, context.Canceled) && r.Context().Err() == nil)) {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toGroupBody(g))
}

// stopOnShutdown ends ctx when the server begins to shut down, so that
// long-polls answer at once instead of holding the shutdown.
func (s *Server) stopOnShutdown(ctx context.Context) context.Context {
	if s.leases == nil {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.leases.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}
