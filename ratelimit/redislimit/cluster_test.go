package redislimit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/ratelimit"
	"github.com/sluicehq/sluice/ratelimit/redislimit"
)

// TestClusterClient drives the store through a go-redis ClusterClient (on
// miniredis, which reports itself as owning every slot): decisions whose
// keys share a hash tag work, batched or not; keys in different slots are
// rejected before Redis is asked.
func TestClusterClient(t *testing.T) {
	t.Parallel()
	for _, batching := range []bool{true, false} {
		m := miniredis.RunT(t)
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}})
		t.Cleanup(func() { _ = c.Close() })
		s, err := redislimit.New(c, redislimit.Options{DisableBatching: !batching})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })

		minute, hour := ratelimit.PerMinute(1), ratelimit.PerHour(10)
		key := "rate-limit:ip:login:{ip:192.0.2.1}"
		d, err := s.Consume(t.Context(), req(key, minute, 1), req(key, hour, 1))
		if err != nil || !d.Allowed {
			t.Fatalf("batching %v: one tag: %+v, %v; want allowed", batching, d, err)
		}
		before := m.CommandCount()
		_, err = s.Consume(t.Context(), req("a:{x}", minute, 1), req("a:{y}", hour, 1))
		var ia *ratelimit.InvalidArgumentError
		if !errors.As(err, &ia) || !strings.Contains(ia.Rule, "slot") || !strings.Contains(ia.Rule, hour.String()) {
			t.Errorf("batching %v: two slots: err = %v, want an InvalidArgumentError naming the slot rule and the limit", batching, err)
		}
		if after := m.CommandCount(); after != before {
			t.Errorf("batching %v: %d commands sent for a rejected decision, want 0", batching, after-before)
		}
	}
}
