package redisqueue

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The lean path. At ordinary rates a job's cost in Redis is not its
// commands (a few tenths of a microsecond each) but the Lua each script
// run builds around them: the queue tables, the scheduler's state, the
// shared helpers' bookkeeping. Jobs that need none of the scheduler's
// work (no tenant or group) take three small self-contained scripts
// instead (lua/lean_*.lua) that write exactly what the full ones write
// for such jobs, fair order, unique keys, event log and outbox included:
//   - an enqueue whose specs all qualify runs lean_enqueue;
//   - a lease runs lean_lease, which answers "full" before any write
//     when the run needs more (due jobs to promote, a due scheduler
//     timer, a pause, a candidate with a tenant or group); the lease then
//     runs lease.lua, and leases of those queues skip the lean try for
//     leanPause;
//   - a complete runs lean_complete unless the lease token says the job
//     has a tenant or group (lease.lua ends such tokens with tokenScoped);
//     a job found to need more (children, say) makes it answer "full",
//     and complete.lua runs.
// Stores shared by processes of different versions stay correct: each
// path writes the same fields and indexes.

// leanFull is the reply of a lean script that leaves the run to the full
// one.
const leanFull = "full"

// tokenScoped ends the lease token of a job with a tenant or group.
const tokenScoped = "s"

// leanPause is how long a queue's leases go straight to lease.lua after a
// lean lease answered "full": the reasons mostly last (a queue of tenant
// jobs, a pause), and each try costs a round trip.
const leanPause = time.Second

// Positions in queueKeyNames of the keys the lean scripts take.
const (
	keyPending   = 0
	keyScheduled = 1
	keyRetrying  = 2
	keyActive    = 3
	keyCompleted = 4
	keyJobs      = 8
	keySeq       = 9
)

// leanOn reports whether the backend may take the lean path.
func (b *Backend) leanOn() bool { return !b.noLean }

// leanLog returns the lean scripts' event log arguments: the stream's
// key ("" when the log is off) and its approximate maximum length.
func (b *Backend) leanLog() (key, max string) {
	if b.events.key == "" {
		return "", "0"
	}
	return b.events.key, b.events.args[1].(string)
}

// leanSpecs reports whether specs, all of one queue, may take the lean
// enqueue.
func (b *Backend) leanSpecs(specs []queue.JobSpec) bool {
	if !b.leanOn() {
		return false
	}
	for _, s := range specs {
		if s.Tenant != "" || s.Group != "" {
			return false
		}
	}
	return true
}

// enqueueLean stores specs of queue k with lean_enqueue.
func (b *Backend) enqueueLean(ctx context.Context, k *qkeys, specs []queue.JobSpec) ([]queue.Enqueued, error) {
	logKey, logMax := b.leanLog()
	c := &call{
		script: scriptLeanEnqueue,
		keys:   []string{k.keys[keyPending], k.keys[keyScheduled], k.keys[keyJobs], k.keys[keySeq], k.keys[keySched]},
		args: []any{b.now(), b.schedPrefix, k.jobPrefix, k.channel, k.name, b.notes.origin,
			btoi(b.notes.listening(k.channel)), logKey, logMax, k.idSuffix},
		items: make([][]any, len(specs)),
		// Merged as enqueueIn's calls are, never with them.
		mergeKey: "lean_enqueue\x00" + k.name, split: splitEnqueue, linger: b.enqLinger,
	}
	for i, s := range specs {
		runAt := "0"
		if !s.RunAt.IsZero() {
			runAt = strconv.FormatInt(s.RunAt.UnixMicro(), 10)
			c.timed = true
		}
		ukk, ufor := "", "0"
		if s.UniqueKey != "" {
			ukk, ufor = b.keys.uniqueKey(s.Queue, s.UniqueKey), us(s.UniqueFor)
		}
		// 11 per spec, lean_enqueue.lua's order.
		c.items[i] = []any{s.Kind, s.Payload, s.Priority, runAt, maxAttempts(s), int64(s.Timeout),
			backend.EncodeWebhook(s.Webhook), s.Trace, s.UniqueKey, ukk, ufor}
	}
	res, err := b.evalCall(ctx, "enqueue", c)
	if err != nil {
		if !errors.Is(err, queue.ErrClosed) {
			b.notes.wakeLocal(k.channel)
		}
		return nil, err
	}
	qs := []*qkeys{k}
	out, woken, err := decodeEnqueued(res, qs, map[string]int{k.name: 1}, specs)
	if err != nil {
		return nil, b.fault("enqueue", err)
	}
	b.wakeLocal(qs, woken)
	return out, nil
}

// leaseLean runs lean_lease on queues qs. It returns the reply, or nil
// when the lease is the full script's to run.
func (b *Backend) leaseLean(ctx context.Context, qs []*qkeys, req backend.LeaseRequest, max int, tokens string) (any, error) {
	now := b.localNow()
	if !b.leanOn() {
		return nil, nil
	}
	known, tgen := b.headsKnown(qs)
	keys := make([]string, 0, 6*len(qs))
	args := make([]any, 0, 9+3*len(qs))
	args = append(args, b.now(), b.schedPrefix, len(qs))
	for _, k := range qs {
		if now.UnixNano() < k.fullUntil.Load() {
			return nil, nil
		}
		keys = append(keys, k.keys[keyPending], k.keys[keyScheduled], k.keys[keyRetrying], k.keys[keyActive],
			k.keys[keySched], k.keys[keyPaused])
		args = append(args, k.jobPrefix, k.name, k.idSuffix)
	}
	logKey, logMax := b.leanLog()
	args = append(args, max, us(req.LeaseFor), req.WorkerID, tokens, logKey, logMax, known)
	res, err := b.direct(ctx, "lease", &call{script: scriptLeanLease, keys: keys, args: args})
	if err != nil {
		return nil, err
	}
	if s, ok := res.(string); ok && s == leanFull {
		for _, k := range qs {
			k.fullUntil.Store(now.Add(leanPause).UnixNano())
		}
		return nil, nil
	}
	if top, ok := res.([]any); ok && len(top) == 6 {
		b.headsRead(qs, tgen, asString(top[5]), micros(asString(top[0])))
	}
	return res, nil
}

// completeLean runs lean_complete for one job of queue k. It returns
// done false when complete.lua is to run instead.
func (b *Backend) completeLean(ctx context.Context, k *qkeys, seq, token string, result []byte) (done bool, err error) {
	if !b.leanOn() || strings.HasSuffix(token, tokenScoped) {
		return false, nil
	}
	logKey, logMax := b.leanLog()
	nonce := ""
	if b.outbox != "" {
		nonce = b.outboxArgs()[0].(string)
	}
	res, err := b.evalCall(ctx, "complete", &call{
		script: scriptLeanComplete, keys: []string{k.keys[keyActive], k.keys[keyCompleted]},
		args:     []any{b.now(), k.jobPrefix, logKey, logMax, k.name, k.idSuffix, b.outbox, nonce},
		items:    [][]any{{seq, token, result}},
		mergeKey: "lean_complete\x00" + k.name, split: splitLean, linger: b.lingerFor(ctx),
	})
	if err != nil {
		return true, err
	}
	if s, ok := res.(string); ok && s == leanFull {
		return false, nil
	}
	return true, completeCode(b, res)
}

// splitLean is splitList for a lean script, whose "full" reply goes to
// every call of the run.
func splitLean(res any, from, n int) (any, error) {
	if s, ok := res.(string); ok && s == leanFull {
		return s, nil
	}
	return splitList(res, from, n)
}
