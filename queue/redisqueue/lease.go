package redisqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// Lease implements backend.Backend. It hands out at most 1000 jobs per call.
// On a Redis Cluster client with several queues it leases queue by queue
// in the order given.
func (b *Backend) Lease(ctx context.Context, req backend.LeaseRequest) ([]queue.Lease, error) {
	if len(req.Queues) == 0 || req.Max < 1 || req.LeaseFor <= 0 {
		return nil, backend.InvalidArgument(queue.Field("", "LeaseRequest"), "needs queues, Max >= 1 and LeaseFor > 0, got %d queues, Max %d, LeaseFor %s",
			len(req.Queues), req.Max, req.LeaseFor)
	}
	qs := make([]*qkeys, 0, len(req.Queues))
	seen := map[string]bool{}
	for _, q := range req.Queues {
		if q == "" {
			return nil, backend.InvalidArgument(queue.Field("LeaseRequest", "Queues"), "must not contain an empty name")
		}
		if !seen[q] {
			seen[q] = true
			qs = append(qs, b.keys.queue(q))
		}
	}
	max := min(req.Max, maxLease)
	if !b.cluster {
		return b.leaseFrom(ctx, qs, req, max)
	}
	var out []queue.Lease
	for _, k := range qs {
		ls, err := b.leaseFrom(ctx, []*qkeys{k}, req, max-len(out))
		if err != nil {
			return out, err
		}
		if len(ls) > 0 {
			b.registerAfter(ctx, []*qkeys{k})
		}
		if out = append(out, ls...); len(out) >= max {
			break
		}
	}
	return out, nil
}

// leaseFrom runs the lease script on queues that share a slot (or any
// queues off Cluster).
func (b *Backend) leaseFrom(ctx context.Context, qs []*qkeys, req backend.LeaseRequest, max int) ([]queue.Lease, error) {
	tokens, err := newToken()
	if err != nil {
		return nil, b.fault("lease", err)
	}
	idle, gen := b.idleNow(qs)
	if idle {
		return nil, nil // nothing ready, and nothing said since (idle.go)
	}
	// A lease goes out at once on its own connection rather than in line
	// behind completes: it is on the path of every job a worker starts,
	// and one call already carries many jobs.
	res, err := b.leaseLean(ctx, qs, req, max, tokens)
	if err != nil {
		return nil, err
	}
	if res == nil {
		keys, args := b.group(qs, 5)
		args = append(args, max, us(req.LeaseFor), req.WorkerID, tokens, promoteLimit)
		res, err = b.direct(ctx, "lease", &call{script: scriptLease, keys: keys, args: args})
		if err != nil {
			return nil, err
		}
	}
	out, woken, err := decodeLeases(res, qs, req.WorkerID)
	if err != nil {
		return nil, b.fault("lease", err)
	}
	top := res.([]any) // decodeLeases checked it
	b.idleAfter(qs, gen, asString(top[4]), micros(asString(top[0])))
	b.wakeLocal(qs, woken)
	return out, nil
}

// decodeLeases reads {now, until, per lease {queue position, seq, token,
// job before the lease}, woken, idle until} and applies the lease to each
// job as the script stored it.
func decodeLeases(res any, qs []*qkeys, worker string) ([]queue.Lease, []any, error) {
	top, err := asList(res, "lease reply")
	if err != nil || len(top) < 5 { // the lean lease's has a sixth (heads.go)
		return nil, nil, errReply{"lease reply"}
	}
	now, until := micros(asString(top[0])), micros(asString(top[1]))
	items, err := asList(top[2], "leases")
	if err != nil {
		return nil, nil, err
	}
	woken, _ := top[3].([]any)
	out := make([]queue.Lease, 0, len(items))
	for _, v := range items {
		it, err := asList(v, "lease")
		if err != nil || len(it) != 4 {
			return nil, nil, errReply{"lease"}
		}
		p := int(asInt(it[0]))
		if p < 1 || p > len(qs) {
			return nil, nil, errReply{"lease queue position"}
		}
		j, err := decodeJob(qs[p-1], asString(it[1]), it[3])
		if err != nil || j == nil {
			return nil, nil, errReply{"leased job"}
		}
		j.State, j.Attempt, j.WorkerID = queue.StateActive, j.Attempt+1, worker
		j.LeaseUntil, j.StartedAt, j.UpdatedAt = until, now, now
		out = append(out, queue.Lease{Job: j, Token: asString(it[2])})
	}
	return out, woken, nil
}

// newToken returns 128 random bits in hex. One Lease call draws one and
// numbers its leases after it ("<hex>.1", "<hex>.2", ...): each lease still
// gets a token nobody can guess or has seen before.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// jobScript runs a per-job script: KEYS are the queue's keys, the job and
// its errors; ARGV the group head, the sequence, own arguments and the
// outbox's arguments (extend, the one per-job script that never ends a
// job, ignores them). It returns the reply as a list whose first element
// was "ok", mapping other codes to the queue's sentinels.
func (b *Backend) jobScript(ctx context.Context, op string, s scriptRef, id string, own ...any) ([]any, *qkeys, error) {
	seq, q, err := parseID(id)
	if err != nil {
		return nil, nil, err
	}
	k := b.keys.queue(q)
	keys, args := b.group([]*qkeys{k}, 1+len(own))
	keys = append(keys, k.jobKey(seq), k.errorsKey(seq))
	args = append(args, seq)
	args = append(args, own...)
	res, err := b.eval(ctx, op, s, keys, args...)
	if err != nil {
		return nil, nil, err
	}
	l, err := asList(res, op+" reply")
	if err != nil || len(l) == 0 {
		return nil, nil, b.fault(op, errReply{op + " reply"})
	}
	if code := asString(l[0]); code != codeOK {
		return nil, nil, fenceError(op, code)
	}
	return l, k, nil
}

// Extend implements backend.Backend.
func (b *Backend) Extend(ctx context.Context, id, token string, leaseFor time.Duration) (backend.LeaseStatus, error) {
	l, _, err := b.jobScript(ctx, "extend", scriptExtend, id, token, us(leaseFor))
	if err != nil {
		return backend.LeaseStatus{}, err
	}
	if len(l) != 3 {
		return backend.LeaseStatus{}, b.fault("extend", errReply{"extend reply"})
	}
	return backend.LeaseStatus{Until: micros(asString(l[1])), CancelRequested: asString(l[2]) == "1"}, nil
}

// Complete implements backend.Backend. Concurrent Complete calls on one
// queue that meet in the batcher run as one script.
func (b *Backend) Complete(ctx context.Context, id, token string, result []byte) error {
	seq, q, err := parseID(id)
	if err != nil {
		return err
	}
	k := b.keys.queue(q)
	if done, err := b.completeLean(ctx, k, seq, token, result); done {
		return err
	}
	keys, args := b.group([]*qkeys{k}, 0)
	res, err := b.evalCall(ctx, "complete", &call{
		script: scriptComplete, keys: keys, args: args, items: [][]any{{seq, token, result}},
		mergeKey: "complete\x00" + q, split: splitList, linger: b.lingerFor(ctx),
	})
	if err != nil {
		return err
	}
	return completeCode(b, res)
}

// completeCode reads a complete reply for one job: {code}.
func completeCode(b *Backend, res any) error {
	codes, err := asList(res, "complete reply")
	if err != nil || len(codes) != 1 {
		return b.fault("complete", errReply{"complete reply"})
	}
	if code := asString(codes[0]); code != codeOK {
		return fenceError("complete", code)
	}
	return nil
}

// splitList is the split of scripts that reply one element per item.
func splitList(res any, from, n int) (any, error) {
	l, err := asList(res, "reply")
	if err != nil || from+n > len(l) {
		return nil, errReply{"merged reply"}
	}
	return l[from : from+n], nil
}

// Fail implements backend.Backend.
func (b *Backend) Fail(ctx context.Context, id, token string, f backend.Failure) (queue.State, error) {
	f.Error = queue.StorableError(f.Error)
	perm := "0"
	if f.Permanent {
		perm = "1"
	}
	return b.stateScript(ctx, "fail", scriptFail, id, token, f.Error, us(f.RetryIn), perm)
}

// Snooze implements backend.Backend.
func (b *Backend) Snooze(ctx context.Context, id, token string, d time.Duration) (queue.State, error) {
	next := queue.StatePending
	if d > 0 {
		next = queue.StateScheduled
	}
	return b.stateScript(ctx, "snooze", scriptGiveBack, id, token, string(next), us(d))
}

// Requeue implements backend.Backend.
func (b *Backend) Requeue(ctx context.Context, id, token string) (queue.State, error) {
	return b.stateScript(ctx, "requeue", scriptGiveBack, id, token, string(queue.StatePending), "0")
}

// stateScript runs a fenced script that replies {'ok', new state, woken}.
func (b *Backend) stateScript(ctx context.Context, op string, s scriptRef, id string, own ...any) (queue.State, error) {
	l, k, err := b.jobScript(ctx, op, s, id, own...)
	if err != nil {
		return "", err
	}
	if len(l) != 3 {
		return "", b.fault(op, errReply{op + " reply"})
	}
	woken, _ := l[2].([]any)
	b.wakeLocal([]*qkeys{k}, woken)
	return queue.State(asString(l[1])), nil
}
