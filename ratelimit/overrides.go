package ratelimit

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/sluicehq/sluice/clock"
)

// Defaults of OverridesOptions.
const (
	DefaultOverrideTTL       = time.Second
	DefaultOverrideCacheSize = 10_000
)

// OverridesOptions configures Overrides. The zero value is the default for
// every field.
type OverridesOptions struct {
	// Static are overrides from configuration. A dynamic override (stored)
	// for the same scene, policy and subject takes precedence.
	Static []Override
	// TTL is how long a looked-up answer is kept in process before the
	// store is asked again: how long another process's change may take to
	// apply here. 0 means DefaultOverrideTTL (1s); negative asks the store
	// on every call.
	TTL time.Duration
	// CacheSize bounds the answers kept; when full, adding one drops an
	// arbitrary other. 0 means DefaultOverrideCacheSize (10,000).
	CacheSize int
	// Clock ages cached answers; nil means the system clock.
	Clock clock.Clock
}

// Overrides finds the override in force for a call: a subject's own before
// its policy's, a dynamic one (kept in an OverrideStore, so every process
// sharing the store sees it) before a static one. Answers are cached for a
// short TTL in a bounded cache. It is safe for concurrent use.
type Overrides struct {
	store  OverrideStore
	static map[string]Override
	ttl    time.Duration
	size   int
	clock  clock.Clock

	mu    sync.Mutex
	cache map[string]cachedOverride
}

type cachedOverride struct {
	o       Override
	found   bool
	expires time.Time
}

// NewOverrides returns Overrides reading dynamic overrides from store (nil
// for static ones only). It fails with ErrInvalidArgument when a static
// override is invalid or two name the same scene, policy and subject.
func NewOverrides(store OverrideStore, opts OverridesOptions) (*Overrides, error) {
	o := &Overrides{store: store, static: map[string]Override{}, ttl: opts.TTL, size: opts.CacheSize,
		clock: clock.Or(opts.Clock), cache: map[string]cachedOverride{}}
	if o.ttl == 0 {
		o.ttl = DefaultOverrideTTL
	}
	if o.size <= 0 {
		o.size = DefaultOverrideCacheSize
	}
	for _, s := range opts.Static {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if _, dup := o.static[s.ID()]; dup {
			return nil, invalidArg("Override", "%s is overridden twice", s.ID())
		}
		o.static[s.ID()] = s
	}
	return o, nil
}

// Lookup returns the override in force for subject under scene/policy.
// When the store fails, it answers from the last answer it cached (even if
// expired), else from the static overrides, and returns no error.
func (o *Overrides) Lookup(ctx context.Context, scene, policy string, subject []string) (Override, bool, error) {
	sid := OverrideID(scene, policy, subject)
	now := o.clock.Now()
	var stale cachedOverride
	hadStale := false
	if o.ttl > 0 {
		o.mu.Lock()
		c, ok := o.cache[sid]
		o.mu.Unlock()
		if ok && now.Before(c.expires) {
			return c.o, c.found, nil
		}
		stale, hadStale = c, ok
	}
	ids := []string{sid, OverrideID(scene, policy, nil)}
	var dyn [][]byte
	if o.store != nil {
		var err error
		if dyn, err = o.store.GetOverrides(ctx, ids...); err != nil {
			// The store is failing: the decision that follows will say so
			// and its failure mode answer. Keep deciding on the last answer
			// known, else on the static overrides, rather than adding a
			// second point of failure.
			if hadStale {
				return stale.o, stale.found, nil
			}
			dyn = nil
		}
	}
	c := cachedOverride{expires: now.Add(o.ttl)}
	for i, id := range ids {
		if i < len(dyn) && dyn[i] != nil {
			ov, err := decodeOverride(dyn[i])
			if err != nil {
				return Override{}, false, err
			}
			c.o, c.found = ov, true
			break
		}
		if ov, ok := o.static[id]; ok {
			c.o, c.found = ov, true
			break
		}
	}
	o.remember(sid, c)
	return c.o, c.found, nil
}

func (o *Overrides) remember(id string, c cachedOverride) {
	if o.ttl <= 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.cache[id]; !ok && len(o.cache) >= o.size {
		for k := range o.cache { // map order is random: an arbitrary victim
			delete(o.cache, k)
			break
		}
	}
	o.cache[id] = c
}

// Set stores a dynamic override. This process applies it at once; others
// within their TTL.
func (o *Overrides) Set(ctx context.Context, ov Override) error {
	if err := ov.Validate(); err != nil {
		return err
	}
	if o.store == nil {
		return invalidArg("Overrides", "has no store: only static overrides")
	}
	b, err := encodeOverride(ov)
	if err != nil {
		return err
	}
	if err := o.store.PutOverride(ctx, ov.ID(), b); err != nil {
		return err
	}
	o.forget()
	return nil
}

// Delete removes the dynamic override of scene/policy for subject (nil for
// the policy's) and reports whether there was one. Static overrides stay.
func (o *Overrides) Delete(ctx context.Context, scene, policy string, subject []string) (bool, error) {
	if o.store == nil {
		return false, nil
	}
	ok, err := o.store.DeleteOverride(ctx, OverrideID(scene, policy, subject))
	o.forget()
	return ok, err
}

// forget empties the cache, so this process sees its own change at once.
func (o *Overrides) forget() {
	o.mu.Lock()
	clear(o.cache)
	o.mu.Unlock()
}

// List returns the static and the dynamic overrides, each sorted by ID.
func (o *Overrides) List(ctx context.Context) (static, dynamic []Override, err error) {
	for _, s := range o.static {
		static = append(static, s)
	}
	if o.store != nil {
		raw, err := o.store.ListOverrides(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, b := range raw {
			ov, err := decodeOverride(b)
			if err != nil {
				return nil, nil, err
			}
			dynamic = append(dynamic, ov)
		}
	}
	byID := func(s []Override) { sort.Slice(s, func(i, j int) bool { return s[i].ID() < s[j].ID() }) }
	byID(static)
	byID(dynamic)
	return static, dynamic, nil
}
