package redisqueue_test

import (
	"os"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue/backend"
	"github.com/sluicehq/sluice/queue/queuetest"
	"github.com/sluicehq/sluice/queue/redisqueue"
)

// openDSN opens the backend of a crash-test DSN, "<prefix> <redis URL>",
// in the test process and in each worker process.
func openDSN(dsn string) (backend.Backend, func() error, error) {
	prefix, url, _ := strings.Cut(dsn, " ")
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	c := redis.NewClient(opts)
	b, err := redisqueue.New(c, redisqueue.Options{Prefix: keyspace.Prefix(prefix), Logger: quiet})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return b, func() error { b.Close(); return c.Close() }, nil
}

// TestCrash kills a worker process with SIGKILL in the middle of its jobs
// and lets a second process finish them (queuetest.Crash). Both processes
// reach a miniredis served over TCP by this test, so it always runs; with
// SLUICE_REDIS_URL set it runs on real Redis as well.
//
// The group variant puts the jobs in a group with a completion job: after
// the kill and the rescues, the group completes with exactly one.
func TestCrash(t *testing.T) {
	for _, group := range []string{"", "crawl"} {
		name := "plain"
		if group != "" {
			name = "group"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("miniredis", func(t *testing.T) {
				m := miniredis.RunT(t)
				queuetest.Crash(t, queuetest.CrashConfig{DSN: string(randomPrefix()) + " redis://" + m.Addr(), Open: openDSN, Group: group})
			})
			t.Run("redis", func(t *testing.T) {
				s := realServer(t)
				queuetest.Crash(t, queuetest.CrashConfig{DSN: string(s.prefix) + " " + os.Getenv("SLUICE_REDIS_URL"), Open: openDSN, Group: group})
			})
		})
	}
}

// TestCrashSchedules kills two of three scheduler processes with SIGKILL
// while a schedule ticks: every tick has exactly one job
// (queuetest.CrashSchedules), on miniredis over TCP and, with
// SLUICE_REDIS_URL set, on real Redis.
func TestCrashSchedules(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		queuetest.CrashSchedules(t, queuetest.CrashConfig{DSN: string(randomPrefix()) + " redis://" + m.Addr(), Open: openDSN})
	})
	t.Run("redis", func(t *testing.T) {
		s := realServer(t)
		queuetest.CrashSchedules(t, queuetest.CrashConfig{DSN: string(s.prefix) + " " + os.Getenv("SLUICE_REDIS_URL"), Open: openDSN})
	})
}
