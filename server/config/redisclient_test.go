package config

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestRedisClientRetries(t *testing.T) {
	tests := []struct {
		url  string
		want int
	}{
		{"redis://127.0.0.1:6379/0", 0}, // go-redis stores "none" (-1) as 0 after init
		{"redis://127.0.0.1:6379/0?max_retries=2", 2},
		{"redis://127.0.0.1:6379/0?dial_timeout=1s", 0},
	}
	for _, tt := range tests {
		c, err := RedisClient(Storage{RedisURL: tt.url})
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		if got := c.(*redis.Client).Options().MaxRetries; got != tt.want {
			t.Errorf("%s: MaxRetries = %d, want %d", tt.url, got, tt.want)
		}
		_ = c.Close()
	}
}
