package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/sluicehq/sluice/queue/queuetype"
)

// Cron expressions are parsed by github.com/robfig/cron/v3, the parser
// most Go schedulers use, with the standard five fields and the
// descriptors. It computes ticks in one location without special rules for
// daylight saving, so ticks are found here on the wall clock instead (see
// wallNext): robfig's parser, our daylight-saving rule.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ticker finds the ticks of a schedule.
type ticker struct {
	// every is set for an interval: ticks are real durations apart.
	every time.Duration
	// spec finds the next wall-clock tick, read in UTC.
	spec cron.Schedule
	loc  *time.Location
}

// compileSchedule parses the timing of s.
func compileSchedule(s Schedule) (*ticker, error) {
	loc := time.UTC
	if s.TimeZone != "" {
		l, err := time.LoadLocation(s.TimeZone)
		if err != nil || strings.EqualFold(s.TimeZone, "local") {
			return nil, queuetype.InvalidArgument(Field("Schedule", "TimeZone"), "must be an IANA time zone name such as \"Europe/Berlin\", got %q", s.TimeZone)
		}
		loc = l
	}
	switch {
	case s.Cron != "" && s.Every != 0:
		return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "must not be set together with Every: set exactly one of Cron and Every")
	case s.Cron == "" && s.Every == 0:
		return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "is missing: set exactly one of Cron and Every")
	case s.Every != 0:
		if err := validEvery(s.Every); err != "" {
			return nil, queuetype.InvalidArgument(Field("Schedule", "Every"), "%s", err)
		}
		return &ticker{every: s.Every, loc: loc}, nil
	}
	return compileCron(s.Cron, loc)
}

// validEvery says what is wrong with an interval, or "" when nothing is.
func validEvery(d time.Duration) string {
	if d < MinEvery || d > MaxDuration {
		return fmt.Sprintf("must be between 1s and 100 years, got %s", d)
	}
	return ""
}

// everyPrefix starts the interval descriptor. robfig's parser rounds its
// duration down to whole seconds and lifts anything shorter to a second,
// so it is read here instead: "@every D" ticks exactly as Every: D does,
// under the same bounds.
const everyPrefix = "@every "

// neverRef is the instant from which an expression is searched for a first
// tick: robfig looks five years ahead, so any date that recurs at all
// (even February 29) is found.
var neverRef = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

// compileCron parses a cron expression or descriptor, refusing one that
// can never tick.
func compileCron(cronExpr string, loc *time.Location) (*ticker, error) {
	expr := strings.TrimSpace(cronExpr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "must not name a time zone; set the time zone field instead, got %q", cronExpr)
	}
	if rest, ok := strings.CutPrefix(expr, everyPrefix); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "\"@every D\" needs a duration such as 30s or 1.5m, got %q", rest)
		}
		if msg := validEvery(d); msg != "" {
			return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "\"@every D\": D %s", msg)
		}
		return &ticker{every: d, loc: loc}, nil
	}
	sched, err := cronParser.Parse(expr)
	if err != nil {
		return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "must be 5 fields (minute hour day month weekday) or a descriptor such as @hourly or \"@every 30s\": %v", err)
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = time.UTC
	}
	k := &ticker{spec: sched, loc: loc}
	if k.next(neverRef).IsZero() {
		return nil, queuetype.InvalidArgument(Field("Schedule", "Cron"), "never matches a date, so it would never run (such as February 30), got %q", cronExpr)
	}
	return k, nil
}

// maxWalk bounds the ticks stepped through in one search; a cron
// expression ticks at most once a minute, so this covers a week of ticks
// at the densest.
const maxWalk = 7 * 24 * 60

// next returns the first tick after t.
func (k *ticker) next(t time.Time) time.Time {
	if k.every > 0 {
		return t.Add(k.every)
	}
	return k.wallNext(t)
}

// wallNext finds the next tick on the wall clock of k.loc: the wall time
// of t is read as if it were UTC, robfig's schedule finds the next wall
// time, and that wall time is placed in k.loc. A wall time in the gap of a
// spring-forward day lands after the gap; one that occurs twice lands on
// its first occurrence, since its second has the same wall time as the
// tick already past. A tick that lands at or before t (two wall times in
// one gap) is passed over, so each instant runs once.
func (k *ticker) wallNext(t time.Time) time.Time {
	w := wall(t.In(k.loc))
	for i := 0; i < maxWalk; i++ {
		w = k.spec.Next(w)
		if w.IsZero() {
			return time.Time{} // never ticks again (e.g. Feb 30)
		}
		at := placeWall(w, k.loc)
		if at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// wall returns the wall clock of t as a UTC time.
func wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// placeWall returns the instant of wall time w (read in UTC) in loc: in a
// spring-forward gap, the first instant after the gap at the same distance
// from its start (02:30 in a 02:00-03:00 gap is 03:30); of two instants
// with this wall time, the earlier.
func placeWall(w time.Time, loc *time.Location) time.Time {
	guess := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	var valid, gap time.Time
	// The offsets in force around w: a transition is never closer to
	// another than a few hours.
	for _, d := range []time.Duration{-6 * time.Hour, 0, 6 * time.Hour} {
		_, off := guess.Add(d).Zone()
		c := w.Add(-time.Duration(off) * time.Second).In(loc)
		if wall(c).Equal(w) {
			if valid.IsZero() || c.Before(valid) {
				valid = c
			}
		} else if c.After(gap) {
			gap = c
		}
	}
	if !valid.IsZero() {
		return valid
	}
	return gap
}

// due returns the ticks after last and at or before now, oldest first:
// the latest max of them. Searching from far back stays bounded: it looks
// back a day, then a year, before walking from last.
func (k *ticker) due(last, now time.Time, max int) []time.Time {
	if first := k.next(last); first.IsZero() || first.After(now) {
		return nil
	}
	if k.every > 0 {
		n := int64(now.Sub(last) / k.every)
		first := n - int64(max) + 1
		if first < 1 {
			first = 1
		}
		out := make([]time.Time, 0, n-first+1)
		for i := first; i <= n; i++ {
			out = append(out, last.Add(time.Duration(i)*k.every))
		}
		return out
	}
	from := last
	for _, back := range []time.Duration{24 * time.Hour, 366 * 24 * time.Hour} {
		if start := now.Add(-back); start.After(last) && !k.next(start).After(now) {
			from = start
			break
		}
	}
	var out []time.Time
	for t := k.next(from); !t.IsZero() && !t.After(now); t = k.next(t) {
		out = append(out, t)
		if len(out) > max {
			out = out[1:]
		}
	}
	return out
}

// upcoming returns the next n ticks after t.
func (k *ticker) upcoming(t time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for len(out) < n {
		t = k.next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}
