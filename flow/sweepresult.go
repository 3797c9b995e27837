package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
)

// Status is what happened to one item of a sweep.
type Status uint8

const (
	// Pending: the item never ran because the context ended first.
	Pending Status = iota
	// Loaded: the call worked and the item has a value.
	Loaded
	// NoResult: the call worked but the item holds nothing (ErrNoResult).
	NoResult
	// Failed: the call failed; SweepItem.Err says why.
	Failed
	// Skipped: the breaker had tripped, so the item was not called.
	Skipped
)

// String returns the status in lower case, such as "loaded".
func (s Status) String() string {
	switch s {
	case Loaded:
		return "loaded"
	case NoResult:
		return "no result"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	}
	return "pending"
}

// SweepItem is one item's outcome.
type SweepItem[R any] struct {
	// Value is what fn returned (the zero value for skipped items).
	Value R
	// Err is fn's error for a Failed item, nil otherwise.
	Err error
	// Status is what happened.
	Status Status
}

// SweepResult is a sweep's outcome: one entry per item, in input order, and
// the counts the outcome rules use.
type SweepResult[R any] struct {
	// Items holds every item's outcome, in input order.
	Items []SweepItem[R]
	// Attempted counts items whose function was called.
	Attempted int
	// Loaded counts calls that worked, with or without a result.
	Loaded int
	// Results counts loaded items that hold a value (not ErrNoResult).
	Results int
	// Failed counts calls that failed, Blocked counts the part of them
	// marked with Blocked.
	Failed, Blocked int
	// Skipped counts items the tripped breaker saved a call for.
	Skipped int
	// Tripped reports whether the breaker tripped.
	Tripped bool
	// Warning is a one-line summary when the sweep succeeded but some
	// items failed or were skipped; empty otherwise.
	Warning string
	// Reasons are the most common failure reasons, most frequent first.
	Reasons []Reason
}

// Values returns the values of the items with a result, in input order.
func (r *SweepResult[R]) Values() []R {
	out := make([]R, 0, r.Results)
	for _, it := range r.Items {
		if it.Status == Loaded {
			out = append(out, it.Value)
		}
	}
	return out
}

func (r *SweepResult[R]) tally(tripped bool) {
	r.Tripped = tripped
	var errs []error
	for _, it := range r.Items {
		switch it.Status {
		case Loaded:
			r.Loaded++
			r.Results++
		case NoResult:
			r.Loaded++
		case Failed:
			r.Failed++
			if errors.Is(it.Err, ErrBlocked) {
				r.Blocked++
			}
			errs = append(errs, it.Err)
		case Skipped:
			r.Skipped++
		}
	}
	r.Attempted = r.Loaded + r.Failed
	r.Reasons = topReasons(errs, maxReasons)
}

// judge applies the outcome rules (see Sweep).
func (r *SweepResult[R]) judge(ctx context.Context, cfg sweepConfig) error {
	n := len(r.Items)
	switch {
	case r.Loaded == 0 && r.Failed > 0 && r.Tripped:
		return r.fail(fmt.Sprintf("flow: sweep of %s stopped: the breaker tripped after %d blocked failures with none loaded, likely a consent or block page; %d attempted, %d failed, %d skipped without a call",
			count(n, cfg.noun), cfg.tripAfter, r.Attempted, r.Failed, r.Skipped))
	case r.Loaded == 0 && r.Failed > 0:
		return r.fail(fmt.Sprintf("flow: all %s attempted failed, %d skipped", count(r.Attempted, cfg.noun), r.Skipped))
	case r.Results == 0 && r.Failed > 0 && (r.Tripped || r.Failed >= r.Loaded):
		return r.fail(fmt.Sprintf("flow: no results from %s, but %d failed and %d were skipped: too few loaded to conclude there are none",
			count(r.Loaded, "loaded "+cfg.noun), r.Failed, r.Skipped))
	case r.Failed > 0 || r.Skipped > 0:
		r.Warning = fmt.Sprintf("flow: partial sweep: %d of %s loaded, %d failed, %d skipped%s",
			r.Loaded, count(n, cfg.noun), r.Failed, r.Skipped, reasonSuffix(r.Reasons))
		cfg.logger.LogAttrs(ctx, slog.LevelWarn, r.Warning,
			slog.Int("loaded", r.Loaded), slog.Int("failed", r.Failed), slog.Int("skipped", r.Skipped))
	}
	return nil
}

func (r *SweepResult[R]) fail(msg string) error {
	return &SweepError{Message: msg + reasonSuffix(r.Reasons), Attempted: r.Attempted, Loaded: r.Loaded,
		Failed: r.Failed, Blocked: r.Blocked, Skipped: r.Skipped, Tripped: r.Tripped, Reasons: r.Reasons}
}

// SweepError is a sweep that failed as a whole (see Sweep's outcome rules).
type SweepError struct {
	// Message is the whole error message.
	Message string
	// The counts, as in SweepResult.
	Attempted, Loaded, Failed, Blocked, Skipped int
	// Tripped reports whether the breaker tripped.
	Tripped bool
	// Reasons are the most common failure reasons, most frequent first.
	Reasons []Reason
}

func (e *SweepError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrSweepFailed) true.
func (e *SweepError) Is(target error) bool { return target == ErrSweepFailed }

// Unwrap returns one error per reason, so errors.Is and errors.As see the
// causes (such as ErrBlocked or context.DeadlineExceeded).
func (e *SweepError) Unwrap() []error {
	out := make([]error, len(e.Reasons))
	for i, r := range e.Reasons {
		out[i] = r.Err
	}
	return out
}

// maxReasons is how many reasons a message names.
const maxReasons = 3

// Reason is a group of failures with the same root cause.
type Reason struct {
	// Text is the root cause's message.
	Text string
	// Count is how many items failed this way.
	Count int
	// Err is the first such item error.
	Err error
}

// topReasons groups errs by the message of their root cause (the innermost
// error of the Unwrap chain), so "GET /a: connection refused" and
// "GET /b: connection refused" are one reason.
func topReasons(errs []error, limit int) []Reason {
	var out []Reason
	at := map[string]int{}
	for _, err := range errs {
		text := rootCause(err).Error()
		if i, ok := at[text]; ok {
			out[i].Count++
			continue
		}
		at[text] = len(out)
		out = append(out, Reason{Text: text, Count: 1, Err: err})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

func reasonSuffix(reasons []Reason) string {
	if len(reasons) == 0 {
		return ""
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s (%d)", oneLine(r.Text), r.Count)
	}
	return "; top reasons: " + strings.Join(parts, ", ")
}

// oneLine keeps a reason to its first line, so a panic's stack does not
// break the one-line message.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// count writes "1 date" or "3 dates".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
