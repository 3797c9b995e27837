package amqpqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
)

// RedisRecorderOptions configures a RedisRecorder. The zero value is the
// default.
type RedisRecorderOptions struct {
	// Prefix is put before every key; default keyspace.DefaultPrefix
	// ("sluice:").
	Prefix keyspace.Prefix
	// Retention says how long a job is kept after reaching each final
	// state; zero fields are the defaults (completed 24h, failed 7 days,
	// cancelled 24h), negative ones keep forever.
	Retention queue.Retention
	// LiveFor is how long a job in a non-final state is kept after its
	// last change, so that jobs whose outcome is never recorded (their
	// process died) do not stay forever; default 7 days.
	LiveFor time.Duration
	// FinalOnly records final states only (completed, failed, cancelled):
	// one write per job instead of one per transition. Get then answers
	// queue.ErrNotFound for a job that has not finished, unless the
	// process holding it is the one asked.
	FinalOnly bool
}

// RedisRecorder is a Recorder on Redis, shared by every process of a
// deployment, so that any of them answers Get for any lane job. Each job
// is one string key, <prefix>lane-job:<id>, holding the job as JSON and
// expiring on its own (Options.Retention, LiveFor): nothing else needs
// cleaning. Each Record is one SET, on the caller's path.
type RedisRecorder struct {
	c    redis.UniversalClient
	opts RedisRecorderOptions
}

var _ Recorder = (*RedisRecorder)(nil)

// NewRedisRecorder returns a recorder on c. It fails when the prefix is
// not valid.
func NewRedisRecorder(c redis.UniversalClient, opts RedisRecorderOptions) (*RedisRecorder, error) {
	if c == nil {
		return nil, invalid("client", "must not be nil")
	}
	if opts.Prefix == "" {
		opts.Prefix = keyspace.DefaultPrefix
	}
	if err := opts.Prefix.Validate(); err != nil {
		return nil, invalid("RedisRecorderOptions.Prefix", "%v", err)
	}
	if opts.LiveFor <= 0 {
		opts.LiveFor = 7 * 24 * time.Hour
	}
	opts.Retention = opts.Retention.WithDefaults()
	return &RedisRecorder{c: c, opts: opts}, nil
}

func (r *RedisRecorder) key(id string) (string, error) {
	if id == "" {
		return "", queue.ErrNotFound
	}
	k, err := keyspace.Join("lane-job", id)
	if err != nil {
		return "", err
	}
	return r.opts.Prefix.Physical(k)
}

// Record stores j, expiring by its state.
func (r *RedisRecorder) Record(ctx context.Context, j *queue.Job) error {
	ttl, final := r.opts.Retention.For(j.State)
	if !final {
		if r.opts.FinalOnly {
			return nil
		}
		ttl = r.opts.LiveFor
	}
	k, err := r.key(j.ID)
	if err != nil {
		return err
	}
	buf, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("amqpqueue: encode job %s: %w", j.ID, err)
	}
	if ttl < 0 {
		ttl = 0 // keep forever
	} else if ttl == 0 {
		return r.c.Del(ctx, k).Err() // kept for no time at all
	}
	if err := r.c.Set(ctx, k, buf, ttl).Err(); err != nil {
		return fmt.Errorf("amqpqueue: record job %s: %w", j.ID, err)
	}
	return nil
}

// Lookup returns the job's latest recorded state, or queue.ErrNotFound.
func (r *RedisRecorder) Lookup(ctx context.Context, id string) (*queue.Job, error) {
	k, err := r.key(id)
	if err != nil {
		return nil, queue.ErrNotFound
	}
	buf, err := r.c.Get(ctx, k).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, queue.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("amqpqueue: look up job %s: %w", id, err)
	}
	var j queue.Job
	if err := json.Unmarshal(buf, &j); err != nil {
		return nil, fmt.Errorf("amqpqueue: decode job %s: %w", id, err)
	}
	return &j, nil
}
