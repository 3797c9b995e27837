package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
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
// returns at once when the job ends, so this only paces the bar's
// updates from the job's progress.
const waitPoll = time.Second

// waitOne waits for one job with a bar of its own progress (percent),
// long-polling GET /v1/jobs/{id}?wait= so that the end is seen at once.
func waitOne(cmd *cobra.Command, cf *clientFlags, id string) error {
	c := cf.client()
	w := cmd.ErrOrStderr()
	bar := progressbar.NewOptions(100, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("wait"),
		progressbar.OptionSetWidth(30), progressbar.OptionShowCount(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
	var j job
	for {
		j = job{}
		path := fmt.Sprintf("/v1/jobs/%s?wait=%s", pathEscape(id), waitPoll)
		if _, err := c.callJSON(cmd.Context(), "GET", path, nil, &j); err != nil {
			return err
		}
		desc := describeCounts("wait", map[string]int64{j.State: 1})
		if j.Progress != nil && len(j.Progress.Data) > 0 {
			desc += " " + clipText(string(j.Progress.Data), 60)
		}
		bar.Describe(desc)
		if j.Progress != nil && j.Progress.Percent != nil {
			_ = bar.Set(int(*j.Progress.Percent))
		}
		if j.final() {
			break
		}
	}
	if j.State == "completed" {
		_ = bar.Set(100)
	}
	_ = bar.Finish()
	n := map[string]int{j.State: 1}
	fmt.Fprintf(cmd.OutOrStdout(), "completed %d, failed %d, cancelled %d\n", n["completed"], n["failed"], n["cancelled"])
	if j.State != "completed" {
		return &exitError{code: 1, msg: "not every job completed"}
	}
	return nil
}

// clipText cuts s to n bytes with an ellipsis.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
