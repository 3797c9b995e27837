package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal, where a bar may be redrawn
// in place with carriage returns; anywhere else (a file, a pipe, a CI
// log) the waits write one line per change instead.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// percentsShown bounds how many jobs' percents a terminal bar lists.
const percentsShown = 5

// waitView is what `job wait` and `job enqueue --wait` show on standard
// error while they wait: every job's own state and progress (percent and
// data). On a terminal it is one bar redrawn in place: the job's percent
// for one job; for several, the finished jobs over the total with each
// running job's percent. Elsewhere it is one line per change: a job's
// line ("job 12: active 40% {...}") when its state or progress changes,
// and the counts by state ("wait: completed 1, active 2") when they do.
type waitView struct {
	w     io.Writer
	tty   bool
	ids   []string
	jobs  map[string]job
	shown map[string]string // line mode: the line last written for each job
	sum   string            // line mode: the counts line last written
	bar   *progressbar.ProgressBar
	drawn time.Time
}

func newWaitView(w io.Writer, ids []string) *waitView {
	return &waitView{w: w, tty: isTerminal(w), ids: ids, jobs: make(map[string]job, len(ids)), shown: map[string]string{}}
}

// update records a job as just read; in line mode it writes the job's
// line when that changed.
func (v *waitView) update(j job) {
	v.jobs[j.ID] = j
	if v.tty {
		if time.Since(v.drawn) >= progressEvery {
			v.draw()
		}
		return
	}
	if line := jobLine(j); v.shown[j.ID] != line {
		v.shown[j.ID] = line
		fmt.Fprintln(v.w, line)
	}
}

// flush shows the counts after a round of reads: the bar redrawn, or the
// counts line when it changed.
func (v *waitView) flush() {
	if v.tty {
		v.draw()
		return
	}
	if s := describeCounts("wait", v.counts()); s != v.sum {
		v.sum = s
		fmt.Fprintln(v.w, s)
	}
}

// finish shows the end: the last counts, and the bar's line ended.
func (v *waitView) finish() {
	v.flush()
	if v.bar != nil {
		if len(v.ids) == 1 && v.counts()["completed"] == 1 {
			_ = v.bar.Set(100)
		}
		_ = v.bar.Finish()
	}
}

// counts is the jobs read so far by state.
func (v *waitView) counts() map[string]int64 {
	out := map[string]int64{}
	for _, j := range v.jobs {
		out[j.State]++
	}
	return out
}

// draw redraws the terminal bar.
func (v *waitView) draw() {
	v.drawn = time.Now()
	counts := v.counts()
	size, done := len(v.ids), int(counts["completed"]+counts["failed"]+counts["cancelled"])
	if len(v.ids) == 1 {
		size, done = 100, 0
		if p := v.jobs[v.ids[0]].Progress; p != nil && p.Percent != nil {
			done = int(*p.Percent)
		}
	}
	if v.bar == nil {
		v.bar = progressbar.NewOptions(size, progressbar.OptionSetWriter(v.w), progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(), progressbar.OptionOnCompletion(func() { fmt.Fprintln(v.w) }))
	}
	v.bar.Describe(v.describe())
	_ = v.bar.Set(done)
}

// describe is the terminal bar's text: the counts, then the one job's
// progress data, or each running job's own percent.
func (v *waitView) describe() string {
	desc := describeCounts("wait", v.counts())
	if len(v.ids) == 1 {
		if p := v.jobs[v.ids[0]].Progress; p != nil && len(p.Data) > 0 {
			desc += " " + clipText(string(p.Data), 60)
		}
		return desc
	}
	var parts []string
	for _, id := range v.ids {
		j, ok := v.jobs[id]
		if !ok || j.final() || j.Progress == nil || j.Progress.Percent == nil {
			continue
		}
		if len(parts) == percentsShown {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %g%%", id, *j.Progress.Percent))
	}
	if len(parts) > 0 {
		desc += " · " + strings.Join(parts, ", ")
	}
	return desc
}

// jobLine is a job's line: "job 12: active 40% {"pages":7}".
func jobLine(j job) string {
	s := fmt.Sprintf("job %s: %s", j.ID, j.State)
	if j.Progress != nil {
		if p := j.Progress.String(); p != "" {
			s += " " + clipText(p, 80)
		}
	}
	return s
}
