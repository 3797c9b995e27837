package redisqueue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Get implements backend.Backend.
func (b *Backend) Get(ctx context.Context, id string) (*queue.Job, error) {
	seq, q, err := parseID(id)
	if err != nil {
		return nil, err
	}
	k := b.keys.queue(q)
	res, err := b.eval(ctx, "get", scriptGet, []string{k.jobKey(seq), k.errorsKey(seq)})
	if err != nil {
		return nil, err
	}
	j, err := decodeJob(k, seq, res)
	if err != nil {
		return nil, b.fault("get", err)
	}
	if j == nil {
		return nil, queue.ErrNotFound
	}
	return j, nil
}

// Cancel implements backend.Backend.
func (b *Backend) Cancel(ctx context.Context, id string) (*queue.Job, error) {
	l, k, err := b.jobScript(ctx, "cancel", scriptCancel, id)
	if err != nil {
		return nil, err
	}
	seq, _, _ := parseID(id)
	j, err := decodeJob(k, seq, l[len(l)-1])
	if err != nil || j == nil || len(l) != 2 {
		return nil, b.fault("cancel", errReply{"cancel reply"})
	}
	if j.State == queue.StateCompleted || j.State == queue.StateFailed {
		return j, queue.ErrJobFinished
	}
	return j, nil
}

// allQueues returns the named queues, or every registered queue when none
// is named, sorted.
func (b *Backend) allQueues(ctx context.Context, op string, named []string) ([]string, error) {
	qs := slices.Clone(named)
	if len(qs) == 0 {
		var err error
		if qs, err = b.client.SMembers(ctx, b.keys.registry).Result(); err != nil {
			return nil, b.fault(op, err)
		}
	}
	slices.Sort(qs)
	return slices.Compact(qs), nil
}

// eachQueue runs one script per queue at once (the batcher sends them as
// one pipeline) and returns the replies in order.
func (b *Backend) eachQueue(ctx context.Context, op string, s scriptRef, qs []string, own ...any) ([]any, error) {
	out := make([]any, len(qs))
	errs := make([]error, len(qs))
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() {
			keys, args := b.group([]*qkeys{b.keys.queue(q)}, len(own))
			out[i], errs[i] = b.eval(ctx, op, s, keys, append(args, own...)...)
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// Stats implements backend.Backend. It counts each queue's index sets
// (ZCARD), never reading a job, and reports a pause in force. A queue
// appears when it has jobs or is paused.
func (b *Backend) Stats(ctx context.Context) ([]queue.QueueStats, error) {
	qs, err := b.allQueues(ctx, "stats", nil)
	if err != nil {
		return nil, err
	}
	res, err := b.eachQueue(ctx, "stats", scriptStats, qs)
	if err != nil {
		return nil, err
	}
	order := []queue.State{queue.StateScheduled, queue.StatePending, queue.StateWaiting, queue.StateActive,
		queue.StateRetrying, queue.StateCompleted, queue.StateFailed, queue.StateCancelled, queue.StateBlocked}
	out := make([]queue.QueueStats, 0, len(qs))
	for i, q := range qs {
		counts, err := asList(res[i], "stats reply")
		if err != nil || len(counts) != len(order)+1 {
			return nil, b.fault("stats", errReply{"stats reply"})
		}
		st := queue.QueueStats{Queue: q, Counts: map[queue.State]int64{}}
		for j, s := range order {
			if n := asInt(counts[j]); n > 0 {
				st.Counts[s] = n
			}
		}
		if pu := asInt(counts[len(order)]); pu > 0 {
			st.PausedUntil = time.UnixMicro(pu)
		}
		if len(st.Counts) > 0 || !st.PausedUntil.IsZero() {
			out = append(out, st)
		}
	}
	return out, nil
}

// RescueExpired implements backend.Backend. Each queue is one atomic step;
// queues are visited in name order until the limit is reached.
func (b *Backend) RescueExpired(ctx context.Context, req backend.RescueRequest) (backend.RescueResult, error) {
	maxStalls := req.MaxStalls
	if maxStalls <= 0 {
		maxStalls = queue.DefaultMaxStalls
	}
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	qs, err := b.allQueues(ctx, "rescue", req.Queues)
	if err != nil {
		return backend.RescueResult{}, err
	}
	var res backend.RescueResult
	for _, q := range qs {
		k := b.keys.queue(q)
		keys, args := b.group([]*qkeys{k}, 2)
		args = append(args, limit-res.Total(), maxStalls)
		v, err := b.eval(ctx, "rescue", scriptRescue, keys, args...)
		if err != nil {
			return res, err
		}
		l, err := asList(v, "rescue reply")
		if err != nil || len(l) != 4 {
			return res, b.fault("rescue", errReply{"rescue reply"})
		}
		res.Requeued += int(asInt(l[0]))
		res.Failed += int(asInt(l[1]))
		res.Cancelled += int(asInt(l[2]))
		woken, _ := l[3].([]any)
		b.wakeLocal([]*qkeys{k}, woken)
		if res.Total() >= limit {
			break
		}
	}
	return res, nil
}

// Cleanup implements backend.Backend. Each queue is one atomic step; queues
// are visited in name order until the limit is reached.
func (b *Backend) Cleanup(ctx context.Context, req backend.CleanupRequest) (int, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = backend.DefaultBatchLimit
	}
	keep := make([]any, 0, 3)
	for _, s := range []queue.State{queue.StateCompleted, queue.StateFailed, queue.StateCancelled} {
		d, _ := req.Retention.For(s)
		if d < 0 {
			keep = append(keep, "")
		} else {
			keep = append(keep, us(d))
		}
	}
	if err := b.cleanGroups(ctx, req.Retention, limit); err != nil {
		return 0, err
	}
	qs, err := b.allQueues(ctx, "cleanup", req.Queues)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, q := range qs {
		keys, args := b.group([]*qkeys{b.keys.queue(q)}, 4)
		v, err := b.eval(ctx, "cleanup", scriptCleanup, keys, append(append(args, limit-deleted), keep...)...)
		if err != nil {
			return deleted, err
		}
		if deleted += int(asInt(v)); deleted >= limit {
			break
		}
	}
	return deleted, nil
}
