package redisqueue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// group returns the KEYS and the leading ARGV every script takes for qs:
// now, the key prefix for the scheduler (empty when it is off), the number of
// queues, and each queue's job prefix and channel.
func (b *Backend) group(qs []*qkeys, extra int) (keys []string, args []any) {
	keys = make([]string, 0, len(qs)*nk+2)
	args = make([]any, 0, 3+2*len(qs)+extra)
	args = append(args, b.now(), b.schedPrefix, len(qs))
	for _, k := range qs {
		keys = append(keys, k.keys...)
		args = append(args, k.jobPrefix, k.channel)
	}
	return keys, args
}

// register adds queue names to the registry of queues, which calls on
// every queue read (Stats, RescueExpired, Cleanup), on a Redis Cluster
// client only: there the registry is in no queue's slot, so the scripts
// cannot write it, and this runs before every Enqueue and after every
// Lease or Retry that gave a queue a job. Off Cluster the scripts
// themselves register the queues they give jobs to, in the same step (see
// register in lua/sched.lua). Either way it happens on every such call,
// not once per process, so a registry Redis lost (a restart without
// persistence, FLUSHDB, a failover that lost a write) heals at the next
// call that gives the queue a job.
func (b *Backend) register(ctx context.Context, qs []*qkeys) error {
	if !b.cluster || len(qs) == 0 {
		return nil
	}
	names := make([]any, len(qs))
	for i, k := range qs {
		names[i] = k.name
	}
	if err := b.client.SAdd(ctx, b.keys.registry, names...).Err(); err != nil {
		return b.fault("register queues", err)
	}
	return nil
}

// registerAfter registers qs after a call that already gave them jobs: a
// fault is logged, not returned, because the call's work is done and the
// next call registers the queues again.
func (b *Backend) registerAfter(ctx context.Context, qs []*qkeys) {
	if err := b.register(ctx, qs); err != nil {
		b.log.Warn("redisqueue: registering queues failed", "err", err)
	}
}

// specFields is how many arguments each spec takes in the enqueue script.
const specFields = 16

// Enqueue implements backend.Backend. On a Redis Cluster client, a batch
// that spans queues is stored queue by queue, each queue's part atomic
// (see Capabilities).
func (b *Backend) Enqueue(ctx context.Context, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if hasDeps(specs) {
		return b.enqueueDeps(ctx, specs)
	}
	var qs []*qkeys
	pos := map[string]int{}
	for _, s := range specs {
		if s.Queue == "" {
			return nil, backend.InvalidArgument(queue.Field("JobSpec", "Queue"), "must not be empty")
		}
		if _, ok := pos[s.Queue]; !ok {
			qs = append(qs, b.keys.queue(s.Queue))
			pos[s.Queue] = len(qs)
		}
	}
	if err := b.register(ctx, qs); err != nil {
		return nil, err
	}
	if len(qs) == 1 && b.leanSpecs(specs) {
		return b.enqueueLean(ctx, qs[0], specs)
	}
	if !b.cluster || len(qs) == 1 {
		return b.enqueueIn(ctx, qs, pos, specs)
	}
	out := make([]queue.Enqueued, len(specs))
	for _, k := range qs {
		var part []queue.JobSpec
		var at []int
		for i, s := range specs {
			if s.Queue == k.name {
				part, at = append(part, s), append(at, i)
			}
		}
		res, err := b.enqueueIn(ctx, []*qkeys{k}, map[string]int{k.name: 1}, part)
		if err != nil {
			return nil, err
		}
		for i, r := range res {
			out[at[i]] = r
		}
	}
	return out, nil
}

// enqueueIn stores specs of queues qs (pos maps a queue name to its place
// in qs, from 1) with one script run.
func (b *Backend) enqueueIn(ctx context.Context, qs []*qkeys, pos map[string]int, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	keys, args := b.group(qs, 0)
	c := &call{script: scriptEnqueue, keys: keys, items: make([][]any, len(specs))}
	scoped, later := false, false
	for i, s := range specs {
		c.items[i] = b.specArgs(make([]any, 0, specFields), pos[s.Queue], s)
		scoped = scoped || s.Tenant != "" || s.Group != ""
		later = later || !s.RunAt.IsZero()
	}
	// A job due later, or one the scheduler may time, is timed work this
	// process's idle workers must not sleep through (see idle.go).
	c.timed = scoped || later
	// The flag spares the script the checks that only specs with a tenant
	// or group need (a full backlog, a closed group).
	heard := make([]byte, len(qs))
	for i, k := range qs {
		heard[i] = '0' + byte(btoi(b.notes.listening(k.channel)))
	}
	c.args = append(args, btoi(scoped), b.notes.origin, string(heard))
	if len(qs) == 1 && (!scoped || b.schedPrefix == "") {
		// Enqueues into the same queue that meet in the batcher run as
		// one script: each is still stored whole, and the unique-key rules
		// apply between them as if they ran one after the other. Specs
		// with a tenant or group may be refused whole (a full backlog, a
		// closed group), which must not refuse another call's specs.
		c.mergeKey, c.split, c.linger = "enqueue\x00"+qs[0].name, splitEnqueue, b.enqLinger
	}
	res, err := b.evalCall(ctx, "enqueue", c)
	if err != nil {
		// The script may have run and sent a message this process skips
		// as its own: wake its workers as if it had.
		if !errors.Is(err, queue.ErrClosed) {
			for _, k := range qs {
				b.notes.wakeLocal(k.channel)
			}
		}
		return nil, err
	}
	out, woken, err := decodeEnqueued(res, qs, pos, specs)
	var full *queue.BacklogFullError
	if errors.As(err, &full) || errors.Is(err, queue.ErrGroupClosed) {
		return nil, err
	}
	if err != nil {
		return nil, b.fault("enqueue", err)
	}
	b.wakeLocal(qs, woken)
	return out, nil
}

func (b *Backend) specArgs(args []any, qpos int, s queue.JobSpec) []any {
	runAt, ukk, ufor := "0", "", "0"
	if !s.RunAt.IsZero() {
		runAt = strconv.FormatInt(s.RunAt.UnixMicro(), 10)
	}
	if s.UniqueKey != "" {
		ukk = b.keys.uniqueKey(s.Queue, s.UniqueKey)
		ufor = us(s.UniqueFor)
	}
	// The scheduler's keys of the spec's tenant and group, which the
	// script would otherwise escape itself (none with the scheduler off).
	tkey, gkey := "", ""
	if b.schedPrefix != "" {
		if s.Tenant != "" {
			tkey = b.keys.tenant(s.Tenant)
		}
		if s.Group != "" {
			gkey = b.keys.group(s.Group)
		}
	}
	return append(args, qpos, s.Kind, s.Payload, s.Tenant, s.Group, s.Priority, runAt,
		maxAttempts(s), int64(s.Timeout), s.UniqueKey, ukk, ufor, backend.EncodeWebhook(s.Webhook), s.Trace,
		tkey, gkey)
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

func maxAttempts(s queue.JobSpec) int {
	if s.MaxAttempts <= 0 {
		return queue.DefaultMaxAttempts
	}
	return s.MaxAttempts
}

// splitEnqueue gives one merged enqueue call its part of the reply
// {now, per spec result, woken}.
func splitEnqueue(res any, from, n int) (any, error) {
	top, err := asList(res, "enqueue reply")
	if err != nil || len(top) != 3 {
		return nil, errReply{"enqueue reply"}
	}
	items, err := splitList(top[1], from, n)
	if err != nil {
		return nil, err
	}
	return []any{top[0], items, top[2]}, nil
}

// refusal returns the error of an enqueue reply that refused the batch:
// {'bf', tenant, backlog, cap} or {'gc', group}; nil for any other reply.
func refusal(top []any) error {
	switch {
	case len(top) == 4 && asString(top[0]) == "bf":
		return &queue.BacklogFullError{Tenant: asString(top[1]), Backlog: asInt(top[2]), Cap: asInt(top[3])}
	case len(top) == 2 && asString(top[0]) == "gc":
		return fmt.Errorf("redisqueue: %w: group %s", queue.ErrGroupClosed, asString(top[1]))
	}
	return nil
}

// decodeEnqueued reads {now, per spec {dup, seq, state | job}, woken}.
func decodeEnqueued(res any, qs []*qkeys, pos map[string]int, specs []queue.JobSpec) ([]queue.Enqueued, []any, error) {
	top, err := asList(res, "enqueue reply")
	if err == nil {
		if err := refusal(top); err != nil {
			return nil, nil, err
		}
	}
	if err != nil || len(top) != 3 {
		return nil, nil, errReply{"enqueue reply"}
	}
	now := micros(asString(top[0]))
	items, err := asList(top[1], "enqueue results")
	if err != nil || len(items) != len(specs) {
		return nil, nil, errReply{"enqueue results"}
	}
	woken, _ := top[2].([]any)
	out := make([]queue.Enqueued, len(specs))
	for i, s := range specs {
		it, err := asList(items[i], "enqueue result")
		if err != nil || len(it) != 3 {
			return nil, nil, errReply{"enqueue result"}
		}
		k := qs[pos[s.Queue]-1]
		seq := asString(it[1])
		if asInt(it[0]) == 1 {
			j, err := decodeJob(k, seq, it[2])
			if err != nil || j == nil {
				return nil, nil, errReply{"duplicate job"}
			}
			out[i] = queue.Enqueued{Job: j, Duplicate: true}
			continue
		}
		out[i] = queue.Enqueued{Job: newJob(k, seq, queue.State(asString(it[2])), s, now)}
	}
	return out, woken, nil
}

// newJob is the job the enqueue script stored, built from its spec
// rather than read back.
func newJob(k *qkeys, seq string, st queue.State, s queue.JobSpec, now time.Time) *queue.Job {
	j := &queue.Job{JobSpec: s, ID: k.id(seq), State: st, CreatedAt: now, UpdatedAt: now}
	j.Payload = bytes.Clone(s.Payload)
	j.MaxAttempts = maxAttempts(s)
	j.UniqueFor = s.UniqueFor.Truncate(time.Microsecond)
	if st != queue.StateScheduled {
		j.RunAt = now
	} else {
		j.RunAt = s.RunAt.Truncate(time.Microsecond).UTC()
	}
	return j
}

// wakeLocal wakes this process's subscribers of the queues a script woke
// (their positions in qs, from 1), without waiting for pub/sub when it
// is not sure to bring the message.
func (b *Backend) wakeLocal(qs []*qkeys, woken []any) {
	for _, p := range woken {
		if i := int(asInt(p)); i >= 1 && i <= len(qs) {
			b.notes.wakeLocal(qs[i-1].channel)
		}
	}
}
