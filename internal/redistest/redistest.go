// Package redistest gives tests a real Redis when one is configured: the
// server named by SLUICE_REDIS_URL, under a random key prefix whose keys are
// deleted when the test ends, so parallel tests and repeated runs never see
// each other's keys.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
)

// EnvURL is the environment variable that names the real Redis.
const EnvURL = "SLUICE_REDIS_URL"

// Real returns the client options for the Redis named by SLUICE_REDIS_URL
// and a fresh random prefix cleaned up when t ends. ok is false when the
// variable is unset; a malformed URL fails the test.
func Real(t testing.TB) (opts *redis.Options, prefix keyspace.Prefix, ok bool) {
	t.Helper()
	url := os.Getenv(EnvURL)
	if url == "" {
		return nil, "", false
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	return opts, Prefix(t, opts), true
}

// Prefix returns a random "sluicetest-<hex>:" prefix and deletes every key
// under it on the server at opts when t ends.
func Prefix(t testing.TB, opts *redis.Options) keyspace.Prefix {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := keyspace.Prefix("sluicetest-" + hex.EncodeToString(b) + ":")
	t.Cleanup(func() { Clean(t, opts, p) })
	return p
}

// Clean deletes every key under prefix p on the server at opts.
func Clean(t testing.TB, opts *redis.Options, p keyspace.Prefix) {
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, string(p)+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("redistest: cleaning up %s*: %v", p, err)
	}
}
