package server

import (
	"encoding/json"
	"net/http"

	"github.com/sluicehq/sluice/queue"
)

func init() {
	// Progress reports name their fields as the worker protocol does.
	apiFields[[2]string{"JobProgress", "Percent"}] = "percent"
	apiFields[[2]string{"JobProgress", "Data"}] = "data"
}

// progressBody is a worker's progress report: a percent from 0 to 100
// and/or a JSON object, at most queue.MaxProgressBytes together.
type progressBody struct {
	Token   string          `json:"token"`
	Percent *float64        `json:"percent"`
	Data    json.RawMessage `json:"data"`
}

func (b *progressBody) leaseToken() string { return b.Token }

// handleProgress records a running job's progress, fenced by the lease
// token: a stale worker's report is refused with 409 like its complete.
// Reports are written as they come: a worker coalesces its own (the Go
// worker writes at most one per queue.ProgressEvery).
func (s *Server) handleProgress(w http.ResponseWriter, r *http.Request) {
	var body progressBody
	if !decodeTokenBody(w, r, &body) {
		return
	}
	p := queue.JobProgress{Percent: body.Percent}
	if len(body.Data) > 0 && string(body.Data) != "null" {
		p.Data = body.Data
	}
	if p.Percent == nil && p.Data == nil {
		// The queue package names its Go fields (Percent, Data).
		writeProblem(w, badRequest("percent or data must be set: a progress report carries at least one"), nil)
		return
	}
	if err := p.Validate(); err != nil {
		s.jobError(w, r, err)
		return
	}
	f := s.backend.Features()
	if f.Progress == nil {
		s.jobError(w, r, &queue.UnsupportedError{Backend: f.Name, Feature: queue.CapProgress})
		return
	}
	if err := f.Progress.SetProgress(r.Context(), r.PathValue("id"), body.Token, p); err != nil {
		s.jobError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
}
