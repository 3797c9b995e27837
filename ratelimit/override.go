package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/keyspace"
)

// Override replaces a policy's limits for one subject, or for every
// subject of the policy: "the enterprise team gets 6,000 chat requests a
// minute instead of 600".
type Override struct {
	// Scene and Policy name the policy overridden. Required.
	Scene  string `json:"scene"`
	Policy string `json:"policy"`
	// Subject is the type/id pairs of the subject, as the scene's
	// Definition returns them; empty overrides the whole policy.
	Subject []string `json:"subject,omitempty"`
	// Limits replace the policy's window limits. Empty keeps them.
	Limits []Limit `json:"limits,omitempty"`
	// InFlight, when set, replaces the policy's in-flight limit.
	InFlight *InFlight `json:"in_flight,omitempty"`
	// Unlimited admits every call without counting (envoy's unlimited).
	Unlimited bool `json:"unlimited,omitempty"`
}

// Validate returns an ErrInvalidArgument error naming the field and the
// rule when o cannot be applied.
func (o Override) Validate() error {
	switch {
	case o.Scene == "":
		return invalidArg("Override.Scene", "must not be empty")
	case o.Policy == "":
		return invalidArg("Override.Policy", "must not be empty")
	case len(o.Subject)%2 != 0:
		return invalidArg("Override.Subject", "must be type/id pairs, got %d segments", len(o.Subject))
	case o.Unlimited && (len(o.Limits) > 0 || o.InFlight != nil):
		return invalidArg("Override.Unlimited", "must not be set together with limits or in_flight")
	case !o.Unlimited && len(o.Limits) == 0 && o.InFlight == nil:
		return invalidArg("Override", "must set limits, in_flight or unlimited")
	}
	for i, s := range o.Subject {
		if s == "" {
			return invalidArg("Override.Subject", "segment %d must not be empty", i)
		}
	}
	for i, l := range o.Limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("Override.Limits[%d]: %w", i, err)
		}
	}
	if o.InFlight != nil {
		return o.InFlight.Validate()
	}
	return nil
}

// ID names the override in an OverrideStore: the escaped scene, policy
// and subject segments.
func (o Override) ID() string { return OverrideID(o.Scene, o.Policy, o.Subject) }

// OverrideID is the ID of the override of scene/policy for subject (nil
// for the whole policy).
func OverrideID(scene, policy string, subject []string) string {
	segs := make([]string, 0, 2+len(subject))
	for _, s := range append([]string{scene, policy}, subject...) {
		segs = append(segs, keyspace.Escape(s))
	}
	return strings.Join(segs, ":")
}

// OverrideStore keeps dynamic overrides where every process sees them:
// memlimit in process, redislimit in one Redis hash. It stores opaque
// values by ID; package ratelimit encodes them.
type OverrideStore interface {
	// PutOverride stores value under id, replacing any.
	PutOverride(ctx context.Context, id string, value []byte) error
	// GetOverrides returns the values of ids in order, nil for an absent
	// one, in one round trip.
	GetOverrides(ctx context.Context, ids ...string) ([][]byte, error)
	// DeleteOverride removes id and reports whether it was there.
	DeleteOverride(ctx context.Context, id string) (bool, error)
	// ListOverrides returns every stored value.
	ListOverrides(ctx context.Context) ([][]byte, error)
}

func encodeOverride(o Override) ([]byte, error) { return json.Marshal(o) }

func decodeOverride(b []byte) (Override, error) {
	var o Override
	if err := json.Unmarshal(b, &o); err != nil {
		return Override{}, fmt.Errorf("ratelimit: stored override is malformed: %w", err)
	}
	return o, nil
}
