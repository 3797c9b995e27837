// Package amqptest gives tests a RabbitMQ broker when one is configured:
// its URL from SLUICE_AMQP_URL (the test is skipped without it) and a
// broker queue prefix no other test uses, whose queues are deleted when the
// test ends.
package amqptest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/queue/amqpqueue"
)

// Env is the variable that names the test broker.
const Env = "SLUICE_AMQP_URL"

// URL returns the test broker's URL, or skips t (saying what) when Env is
// not set.
func URL(t testing.TB, what string) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		t.Skipf("%s is not set: skipping %s (set it to e.g. amqp://guest:guest@127.0.0.1:5672/)", Env, what)
	}
	return u
}

// Prefix returns a broker queue prefix "sluicetest.<area>.<random>." and,
// when t ends, deletes the broker queues a lane under it may have declared
// for queues.
func Prefix(t testing.TB, url, area string, queues ...string) string {
	t.Helper()
	var r [6]byte
	_, _ = rand.Read(r[:])
	prefix := "sluicetest." + area + "." + hex.EncodeToString(r[:]) + "."
	t.Cleanup(func() { DeleteQueues(t, url, prefix, queues...) })
	return prefix
}

// DeleteQueues deletes the broker queues a lane with prefix may have
// declared for queues: the main queue, its dead letters and its delay
// buckets. Deleting a queue that does not exist is not an error.
func DeleteQueues(t testing.TB, url, prefix string, queues ...string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer ch.Close()
	for _, q := range queues {
		names := []string{prefix + q, prefix + q + ".dead"}
		for _, d := range amqpqueue.DefaultDelayBuckets {
			names = append(names, prefix+q+".delay."+strconv.FormatInt(d.Milliseconds(), 10)+"ms")
		}
		for _, n := range names {
			if _, err := ch.QueueDelete(n, false, false, false); err != nil {
				t.Errorf("cleanup: delete %s: %v", n, err)
				return
			}
		}
	}
}
