package amqpqueue

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue"
)

func TestOptionsInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		opts  Options
		field string
	}{
		{"prefetch", Options{Prefetch: -1}, "Options.Prefetch"},
		{"prefetch too big", Options{Prefetch: 70000}, "Options.Prefetch"},
		{"priorities", Options{Priorities: 256}, "Options.Priorities"},
		{"redeliveries", Options{MaxRedeliveries: -1}, "Options.MaxRedeliveries"},
		{"buckets unsorted", Options{DelayBuckets: []time.Duration{time.Second, time.Millisecond}}, "Options.DelayBuckets"},
		{"bucket not whole ms", Options{DelayBuckets: []time.Duration{1500 * time.Microsecond}}, "Options.DelayBuckets"},
		{"dead-letter ttl", Options{DeadLetterTTL: -time.Second}, "Options.DeadLetterTTL"},
		{"reconnect", Options{ReconnectMin: time.Second, ReconnectMax: time.Millisecond}, "Options.ReconnectMin/ReconnectMax"},
		{"prefix", Options{Prefix: strings.Repeat("p", 65)}, "Options.Prefix"},
		{"queue name", Options{Queues: []string{""}}, "queue name"},
		{"queue name too long", Options{Queues: []string{strings.Repeat("q", 250)}}, "queue name"},
		{"lease wait", Options{LeaseWait: -time.Second}, "Options.LeaseWait"},
		{"consumers", Options{Prefetch: 2, Consumers: 3}, "Options.Consumers"},
	}
	for _, c := range cases {
		_, err := New("amqp://guest:guest@127.0.0.1:1/", c.opts)
		if !errors.Is(err, queue.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "amqpqueue: "+c.field+" ") {
			t.Errorf("%s: New error = %v, want ErrInvalidArgument naming %s", c.name, err, c.field)
		}
	}
}

func TestNewUnreachable(t *testing.T) {
	t.Parallel()
	_, err := New("amqp://guest:guest@127.0.0.1:1/", Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "amqpqueue: connect") {
		t.Fatalf("New(unreachable) = %v, want a connect error", err)
	}
}

func TestBucket(t *testing.T) {
	t.Parallel()
	b := &Backend{opts: Options{DelayBuckets: []time.Duration{250 * time.Millisecond, time.Second, time.Minute}}}
	cases := []struct{ d, want time.Duration }{
		{time.Millisecond, 250 * time.Millisecond},
		{250 * time.Millisecond, 250 * time.Millisecond},
		{900 * time.Millisecond, 250 * time.Millisecond},
		{time.Second, time.Second},
		{59 * time.Second, time.Second},
		{time.Hour, time.Minute},
	}
	for _, c := range cases {
		if got := b.bucket(c.d); got != c.want {
			t.Errorf("bucket(%s) = %s, want %s", c.d, got, c.want)
		}
	}
}

func TestAMQPPriority(t *testing.T) {
	t.Parallel()
	cases := []struct{ levels, p, want int }{
		{0, 0, 0}, {0, 7, 0}, {10, 0, 10}, {10, 9, 1}, {10, 10, 0}, {10, 1000, 0}, {3, 1, 2},
	}
	for _, c := range cases {
		b := &Backend{opts: Options{Priorities: c.levels}}
		if got := b.amqpPriority(c.p); int(got) != c.want {
			t.Errorf("Priorities %d: amqpPriority(%d) = %d, want %d", c.levels, c.p, got, c.want)
		}
	}
}
