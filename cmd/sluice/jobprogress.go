package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// jobProgress is a job's latest progress report, as GET /v1/jobs/{id}
// gives it.
type jobProgress struct {
	Percent   *float64        `json:"percent"`
	Data      json.RawMessage `json:"data"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// String is "42%", "42% {"pages":7}" or the data alone.
func (p *jobProgress) String() string {
	s := ""
	if p.Percent != nil {
		s = fmt.Sprintf("%g%%", *p.Percent)
	}
	if len(p.Data) > 0 {
		if s != "" {
			s += " "
		}
		s += string(p.Data)
	}
	return s
}

// printProgress prints a job's progress line for `job get`.
func printProgress(w io.Writer, p *jobProgress) {
	if p != nil {
		fmt.Fprintf(w, "  progress: %s (at %s)\n", p, p.UpdatedAt.Format(time.RFC3339))
	}
}

// waitPoll is how long each long-poll of `job wait` on one job lasts: it
// returns at once when the job ends, so this only paces the updates from
// the job's progress.
const waitPoll = time.Second

// clipText cuts s to n bytes with an ellipsis.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
