package memlimit

import (
	"context"
	"sync"

	"github.com/sluicehq/sluice/ratelimit"
)

var _ ratelimit.OverrideStore = (*Store)(nil)

// overrideTable holds dynamic overrides in process; its zero value is
// empty and ready.
type overrideTable struct {
	mu sync.RWMutex
	m  map[string][]byte
}

// PutOverride stores an override. See ratelimit.OverrideStore.
func (s *Store) PutOverride(ctx context.Context, id string, value []byte) error {
	t := &s.overrides
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string][]byte{}
	}
	t.m[id] = append([]byte(nil), value...)
	return nil
}

// GetOverrides returns stored overrides. See ratelimit.OverrideStore.
func (s *Store) GetOverrides(ctx context.Context, ids ...string) ([][]byte, error) {
	t := &s.overrides
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = t.m[id]
	}
	return out, nil
}

// DeleteOverride removes an override. See ratelimit.OverrideStore.
func (s *Store) DeleteOverride(ctx context.Context, id string) (bool, error) {
	t := &s.overrides
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[id]
	delete(t.m, id)
	return ok, nil
}

// ListOverrides returns every stored override. See ratelimit.OverrideStore.
func (s *Store) ListOverrides(ctx context.Context) ([][]byte, error) {
	t := &s.overrides
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([][]byte, 0, len(t.m))
	for _, v := range t.m {
		out = append(out, v)
	}
	return out, nil
}
