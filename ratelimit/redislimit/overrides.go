package redislimit

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
)

var _ ratelimit.OverrideStore = (*Store)(nil)

// overridesKey is the hash holding every dynamic override, field the
// override's ID: one key, so every server reads the same set.
func (s *Store) overridesKey() string { return string(s.prefix) + "rate-limit-override" }

// PutOverride stores an override with HSET. See ratelimit.OverrideStore.
func (s *Store) PutOverride(ctx context.Context, id string, value []byte) error {
	if err := s.begin(ctx, "put override"); err != nil {
		return err
	}
	if err := s.client.HSet(ctx, s.overridesKey(), id, value).Err(); err != nil {
		return storeError("put override", err)
	}
	return nil
}

// GetOverrides reads overrides with one HMGET. See
// ratelimit.OverrideStore.
func (s *Store) GetOverrides(ctx context.Context, ids ...string) ([][]byte, error) {
	if err := s.begin(ctx, "get overrides"); err != nil {
		return nil, err
	}
	vals, err := s.client.HMGet(ctx, s.overridesKey(), ids...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, storeError("get overrides", err)
	}
	out := make([][]byte, len(ids))
	for i, v := range vals {
		if str, ok := v.(string); ok && i < len(out) {
			out[i] = []byte(str)
		}
	}
	return out, nil
}

// DeleteOverride removes an override with HDEL. See
// ratelimit.OverrideStore.
func (s *Store) DeleteOverride(ctx context.Context, id string) (bool, error) {
	if err := s.begin(ctx, "delete override"); err != nil {
		return false, err
	}
	n, err := s.client.HDel(ctx, s.overridesKey(), id).Result()
	if err != nil {
		return false, storeError("delete override", err)
	}
	return n == 1, nil
}

// ListOverrides reads every override with HGETALL. See
// ratelimit.OverrideStore.
func (s *Store) ListOverrides(ctx context.Context) ([][]byte, error) {
	if err := s.begin(ctx, "list overrides"); err != nil {
		return nil, err
	}
	m, err := s.client.HGetAll(ctx, s.overridesKey()).Result()
	if err != nil {
		return nil, storeError("list overrides", err)
	}
	out := make([][]byte, 0, len(m))
	for _, v := range m {
		out = append(out, []byte(v))
	}
	return out, nil
}
