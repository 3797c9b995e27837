package queue

import (
	"time"
)

// ValidateSpec checks a spec against the rules of JobSpec, with maxPayload
// as the payload limit (DefaultMaxPayload when zero or less). It returns an
// *InvalidArgumentError naming the first field that breaks a rule.
func ValidateSpec(s JobSpec, maxPayload int) error {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	if err := validName("JobSpec.Queue", s.Queue, true); err != nil {
		return err
	}
	if err := validName("JobSpec.Kind", s.Kind, true); err != nil {
		return err
	}
	if err := validName("JobSpec.Tenant", s.Tenant, false); err != nil {
		return err
	}
	if err := validName("JobSpec.Group", s.Group, false); err != nil {
		return err
	}
	if len(s.Payload) > maxPayload {
		return InvalidArgument("JobSpec.Payload", "must be at most %d bytes, got %d", maxPayload, len(s.Payload))
	}
	if s.Priority < 0 || s.Priority > MaxPriority {
		return InvalidArgument("JobSpec.Priority", "must be between 0 and %d, got %d", MaxPriority, s.Priority)
	}
	if s.MaxAttempts < 0 {
		return InvalidArgument("JobSpec.MaxAttempts", "must not be negative, got %d", s.MaxAttempts)
	}
	if s.Timeout < 0 {
		return InvalidArgument("JobSpec.Timeout", "must not be negative, got %s", s.Timeout)
	}
	if len(s.UniqueKey) > MaxUniqueKeyLen {
		return InvalidArgument("JobSpec.UniqueKey", "must be at most %d bytes, got %d", MaxUniqueKeyLen, len(s.UniqueKey))
	}
	if s.UniqueFor < 0 {
		return InvalidArgument("JobSpec.UniqueFor", "must not be negative, got %s", s.UniqueFor)
	}
	if s.UniqueFor > 0 && s.UniqueKey == "" {
		return InvalidArgument("JobSpec.UniqueFor", "requires JobSpec.UniqueKey")
	}
	return nil
}

func validName(field, v string, required bool) error {
	if v == "" {
		if required {
			return InvalidArgument(field, "must not be empty")
		}
		return nil
	}
	if len(v) > MaxNameLen {
		return InvalidArgument(field, "must be at most %d bytes, got %d", MaxNameLen, len(v))
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return InvalidArgument(field, "must not contain control characters, got %q", v)
		}
	}
	return nil
}

// withDefaults fills the spec's zero fields with their defaults and
// normalises RunAt (UTC, so stored times compare the same everywhere).
func (s JobSpec) withDefaults() JobSpec {
	if s.MaxAttempts == 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	if !s.RunAt.IsZero() {
		s.RunAt = s.RunAt.UTC()
	}
	return s
}

// clampDuration keeps d within [lo, hi].
func clampDuration(d, lo, hi time.Duration) time.Duration {
	if d < lo {
		return lo
	}
	if d > hi {
		return hi
	}
	return d
}
