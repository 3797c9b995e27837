package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
)

// stateOrder is the order job states are listed in while waiting: the
// finished ones, then those still to run.
var stateOrder = []string{"completed", "failed", "cancelled", "active", "retrying", "waiting", "pending", "scheduled"}

// progressEvery bounds how often a terminal bar is redrawn while the jobs
// of one round are read.
const progressEvery = 100 * time.Millisecond

// progress is what `group wait` shows on standard error while it polls:
// the number of jobs in each state from the first poll on, so a wait for
// jobs that have not started yet says so at once. On a terminal it is a
// bar of the finished jobs over the total, redrawn in place; elsewhere
// one line each time the counts change.
type progress struct {
	w     io.Writer
	what  string
	tty   bool
	bar   *progressbar.ProgressBar
	desc  string
	max   int64
	drawn time.Time
}

func newProgress(w io.Writer, what string) *progress {
	return &progress{w: w, what: what, tty: isTerminal(w)}
}

// draw shows counts (jobs by state; unknown states are listed last) out
// of total; jobs in a final state are the bar's done part.
func (p *progress) draw(total int64, counts map[string]int64) {
	p.drawn = time.Now()
	total = max(total, 1) // a bar needs a positive length
	desc := describeCounts(p.what, counts)
	if !p.tty {
		if desc != p.desc {
			p.desc = desc
			fmt.Fprintln(p.w, desc)
		}
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionSetWidth(30),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }))
		p.desc, p.max = desc, total
	}
	if total != p.max {
		p.bar.ChangeMax64(total)
		p.max = total
	}
	if desc != p.desc {
		p.bar.Describe(desc)
		p.desc = desc
	}
	_ = p.bar.Set64(min(counts["completed"]+counts["failed"]+counts["cancelled"], total))
}

// finish draws the final counts and ends the bar's line.
func (p *progress) finish(total int64, counts map[string]int64) {
	p.draw(total, counts)
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// describeCounts is "what: completed 3, active 1, pending 6": the states
// with jobs, in stateOrder, then any other state by name.
func describeCounts(what string, counts map[string]int64) string {
	var parts []string
	for _, s := range stateOrder {
		if n := counts[s]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, n))
		}
	}
	var other []string
	for s, n := range counts {
		if n > 0 && !contains(stateOrder, s) {
			other = append(other, fmt.Sprintf("%s %d", s, n))
		}
	}
	slices.Sort(other)
	parts = append(parts, other...)
	if len(parts) == 0 {
		return what
	}
	return what + ": " + strings.Join(parts, ", ")
}
