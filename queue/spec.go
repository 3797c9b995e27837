package queue

import (
	"time"

	"github.com/sluicehq/sluice/queue/queuetype"
)

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
		if err := queuetype.ValidName(n.field, n.v, n.required); err != nil {
			return err
		}
	}
	if len(s.Payload) > maxPayload {
		return queuetype.InvalidArgument(Field("JobSpec", "Payload"), "must be at most %d bytes, got %d", maxPayload, len(s.Payload))
	}
	if s.Priority < 0 || s.Priority > MaxPriority {
		return queuetype.InvalidArgument(Field("JobSpec", "Priority"), "must be between 0 and %d, got %d", MaxPriority, s.Priority)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return queuetype.InvalidArgument(Field("JobSpec", "MaxAttempts"), "must be between 0 (the default, %d) and %d, got %d", DefaultMaxAttempts, MaxAttemptsLimit, s.MaxAttempts)
	}
	if latest := time.Now().Add(MaxDuration); s.RunAt.After(latest) {
		return queuetype.InvalidArgument(Field("JobSpec", "RunAt"), "must be at most 100 years ahead (before %s), got %s",
			latest.UTC().Format(time.RFC3339), s.RunAt.UTC().Format(time.RFC3339))
	}
	if err := queuetype.ValidDuration(Field("JobSpec", "Timeout"), s.Timeout); err != nil {
		return err
	}
	if len(s.UniqueKey) > MaxUniqueKeyLen {
		return queuetype.InvalidArgument(Field("JobSpec", "UniqueKey"), "must be at most %d bytes, got %d", MaxUniqueKeyLen, len(s.UniqueKey))
	}
	if err := CheckText(Field("JobSpec", "UniqueKey"), s.UniqueKey); err != nil {
		return err
	}
	if err := queuetype.ValidDuration(Field("JobSpec", "UniqueFor"), s.UniqueFor); err != nil {
		return err
	}
	if s.UniqueFor > 0 && s.UniqueKey == "" {
		return queuetype.InvalidArgument(Field("JobSpec", "UniqueFor"), "is set without a unique key")
	}
	if err := validDeps(s); err != nil {
		return err
	}
	return validateExtras(s)
}

// unixEpoch is the earliest RunAt kept as given: an earlier one (a time
// long past) means "at once", as any past time does, and is stored as
// such, since not every store can hold times before 1678.
var unixEpoch = time.Unix(0, 0)

// specDefaults fills s's zero fields with their defaults and
// normalises RunAt (UTC, so stored times compare the same everywhere; one
// before 1970 is zero, "at once", as any past time means).
func specDefaults(s JobSpec) JobSpec {
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
