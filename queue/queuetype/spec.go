package queuetype

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

// ValidDuration checks that d is between 0 and MaxDuration.
func ValidDuration(field FieldPath, d time.Duration) error {
	if d < 0 || d > MaxDuration {
		return InvalidArgument(field, "must be between 0 and %s (100 years), got %s", MaxDuration, d)
	}
	return nil
}

// ValidName checks a queue, tenant, kind or group name at field: at most
// MaxNameLen bytes, storable text without control characters or blanks, and
// present when required.
func ValidName(field FieldPath, v string, required bool) error {
	if v == "" {
		if required {
			return InvalidArgument(field, "must not be empty")
		}
		return nil
	}
	if len(v) > MaxNameLen {
		return InvalidArgument(field, "must be at most %d bytes, got %d", MaxNameLen, len(v))
	}
	if !utf8.ValidString(v) {
		return InvalidArgument(field, "must be valid UTF-8, got %q", v)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return InvalidArgument(field, "must not contain control characters, got %q", v)
		}
	}
	// A name of spaces alone reads as no name in every listing and log.
	if strings.TrimSpace(v) == "" {
		return InvalidArgument(field, "must not be blank (only spaces), got %q", v)
	}
	return nil
}
