package queue

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a JobSpec besides those next to it in job.go.
const (
	// MaxDuration bounds every duration a job carries (Timeout,
	// UniqueFor, a group's TTL and MinInterval, a tenant's MaxWait) and
	// how far ahead RunAt may be: 100 years of 365 days. It keeps "now
	// plus any of them" inside the int64 nanoseconds every store can
	// hold (up to the year 2262), so every store reads the same time.
	MaxDuration = 100 * 365 * 24 * time.Hour
	// MaxAttemptsLimit is the largest allowed JobSpec.MaxAttempts: 1000.
	// With DefaultBackoff (capped at an hour) that is some 40 days of
	// retries; a job meant to run longer is better enqueued again.
	MaxAttemptsLimit = 1000
)

// unixEpoch is the earliest RunAt kept as given: an earlier one (a time
// long past) means "at once", as any past time does, and is stored as
// such, since not every store can hold times before 1678.
var unixEpoch = time.Unix(0, 0)

// ValidateSpec checks a spec against the rules of JobSpec, with maxPayload
// as the payload limit (DefaultMaxPayload when zero or less). It returns an
// *InvalidArgumentError naming the first field that breaks a rule. RunAt
// may be at most MaxDuration ahead of the wall clock: a bound that wide
// needs no injected clock.
func ValidateSpec(s JobSpec, maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	for _, n := range []struct {
		field    FieldPath
		v        string
		required bool
	}{
		{Field("JobSpec", "Queue"), s.Queue, true}, {Field("JobSpec", "Kind"), s.Kind, true},
		{Field("JobSpec", "Tenant"), s.Tenant, false}, {Field("JobSpec", "Group"), s.Group, false},
	} {
		if err := validName(n.field, n.v, n.required); err != nil {
			return err
		}
	}
	if len(s.Payload) > maxPayload {
		return invalid(Field("JobSpec", "Payload"), "must be at most %d bytes, got %d", maxPayload, len(s.Payload))
	}
	if s.Priority < 0 || s.Priority > MaxPriority {
		return invalid(Field("JobSpec", "Priority"), "must be between 0 and %d, got %d", MaxPriority, s.Priority)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return invalid(Field("JobSpec", "MaxAttempts"), "must be between 0 (the default, %d) and %d, got %d", DefaultMaxAttempts, MaxAttemptsLimit, s.MaxAttempts)
	}
	if latest := time.Now().Add(MaxDuration); s.RunAt.After(latest) {
		return invalid(Field("JobSpec", "RunAt"), "must be at most 100 years ahead (before %s), got %s",
			latest.UTC().Format(time.RFC3339), s.RunAt.UTC().Format(time.RFC3339))
	}
	if err := validDuration(Field("JobSpec", "Timeout"), s.Timeout); err != nil {
		return err
	}
	if len(s.UniqueKey) > MaxUniqueKeyLen {
		return invalid(Field("JobSpec", "UniqueKey"), "must be at most %d bytes, got %d", MaxUniqueKeyLen, len(s.UniqueKey))
	}
	if err := CheckText(Field("JobSpec", "UniqueKey"), s.UniqueKey); err != nil {
		return err
	}
	if err := validDuration(Field("JobSpec", "UniqueFor"), s.UniqueFor); err != nil {
		return err
	}
	if s.UniqueFor > 0 && s.UniqueKey == "" {
		return invalid(Field("JobSpec", "UniqueFor"), "is set without a unique key")
	}
	if err := validDeps(s); err != nil {
		return err
	}
	return validateExtras(s)
}

// validDuration checks that d is between 0 and MaxDuration.
func validDuration(field FieldPath, d time.Duration) error {
	if d < 0 || d > MaxDuration {
		return invalid(field, "must be between 0 and %s (100 years), got %s", MaxDuration, d)
	}
	return nil
}

func validName(field FieldPath, v string, required bool) error {
	if v == "" {
		if required {
			return invalid(field, "must not be empty")
		}
		return nil
	}
	if len(v) > MaxNameLen {
		return invalid(field, "must be at most %d bytes, got %d", MaxNameLen, len(v))
	}
	if !utf8.ValidString(v) {
		return invalid(field, "must be valid UTF-8, got %q", v)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return invalid(field, "must not contain control characters, got %q", v)
		}
	}
	// A name of spaces alone reads as no name in every listing and log.
	if strings.TrimSpace(v) == "" {
		return invalid(field, "must not be blank (only spaces), got %q", v)
	}
	return nil
}

// withDefaults fills the spec's zero fields with their defaults and
// normalises RunAt (UTC, so stored times compare the same everywhere; one
// before 1970 is zero, "at once", as any past time means).
func (s JobSpec) withDefaults() JobSpec {
	if s.MaxAttempts == 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	if s.RunAt.Before(unixEpoch) {
		s.RunAt = time.Time{}
	}
	if !s.RunAt.IsZero() {
		s.RunAt = s.RunAt.UTC()
	}
	return s
}
