package redisqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

func notFoundGroup(id string) error {
	return fmt.Errorf("redisqueue: %w: group %s", queue.ErrGroupNotFound, id)
}

// CreateGroup implements backend.GroupBackend.
func (b *Backend) CreateGroup(ctx context.Context, spec queue.GroupSpec) (*queue.GroupProgress, error) {
	if err := b.needSched(queue.CapGroups); err != nil {
		return nil, err
	}
	_, args := b.group(nil, 9)
	args = append(args, spec.ID, spec.Tenant, spec.MaxConcurrency, us(spec.MinInterval), us(spec.TTL),
		spec.CompletionKind, spec.CompletionQueue, spec.CompletionPayload, backend.EncodeWebhook(spec.Webhook))
	res, err := b.eval(ctx, "create group", scriptCreateGroup, []string{b.keys.group(spec.ID)}, args...)
	if err != nil {
		return nil, err
	}
	return b.groupReply("create group", spec.ID, res)
}

// Group implements backend.GroupBackend.
func (b *Backend) Group(ctx context.Context, id string) (*queue.GroupProgress, error) {
	if err := b.needSched(queue.CapGroups); err != nil {
		return nil, err
	}
	_, args := b.group(nil, 0)
	res, err := b.eval(ctx, "group", scriptGroup, []string{b.keys.group(id)}, args...)
	if err != nil {
		return nil, err
	}
	return b.groupReply("group", id, res)
}

// CancelGroup implements backend.GroupBackend. The group's jobs are found by
// its set of unfinished jobs, in whatever queue they are, in one script.
func (b *Backend) CancelGroup(ctx context.Context, id string) (*queue.GroupProgress, error) {
	if err := b.needSched(queue.CapGroups); err != nil {
		return nil, err
	}
	_, args := b.group(nil, 1)
	res, err := b.eval(ctx, "cancel group", scriptCancelGroup, []string{b.keys.group(id)}, append(args, id)...)
	if err != nil {
		return nil, err
	}
	return b.groupReply("cancel group", id, res)
}

// groupReply reads {'ok', now, fields}, {'nf'} or {'exists'}.
func (b *Backend) groupReply(op, id string, res any) (*queue.GroupProgress, error) {
	l, err := asList(res, op+" reply")
	if err != nil || len(l) == 0 {
		return nil, b.fault(op, errReply{op + " reply"})
	}
	switch asString(l[0]) {
	case codeNotFound:
		return nil, notFoundGroup(id)
	case "exists":
		return nil, fmt.Errorf("redisqueue: %w: group %s", queue.ErrGroupExists, id)
	}
	if len(l) != 3 {
		return nil, b.fault(op, errReply{op + " reply"})
	}
	fields, err := asList(l[2], "group fields")
	if err != nil {
		return nil, b.fault(op, err)
	}
	return groupProgress(id, micros(asString(l[1])), fields), nil
}

// groupProgress builds a group's progress from its hash (see
// lua/sched.lua for the fields) at time now.
func groupProgress(id string, now time.Time, fields []any) *queue.GroupProgress {
	m := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		m[asString(fields[i])] = asString(fields[i+1])
	}
	dur := func(f string) time.Duration { return time.Duration(asInt(m[f])) * time.Microsecond }
	n := func(st queue.State) int64 { return asInt(m["n:"+string(st)]) }
	p := &queue.GroupProgress{
		GroupSpec: queue.GroupSpec{
			ID: id, Tenant: m["tn"], MaxConcurrency: atoi(m["mc"]), MinInterval: dur("mi"), TTL: dur("ttl"),
			CompletionKind: m["ck"], CompletionQueue: m["cq"],
		},
		Scheduled: n(queue.StateScheduled), Pending: n(queue.StatePending), Waiting: n(queue.StateWaiting),
		Active: n(queue.StateActive), Retrying: n(queue.StateRetrying), Completed: n(queue.StateCompleted),
		Failed: n(queue.StateFailed), Cancelled: n(queue.StateCancelled), Blocked: n(queue.StateBlocked),
		CancelRequested: m["cr"] == "1", Done: m["da"] != "", CompletionJobID: m["cj"],
		CreatedAt: micros(m["ca"]), FinishedAt: micros(m["da"]),
	}
	if cp := m["cp"]; cp != "" {
		p.CompletionPayload = []byte(cp)
	}
	p.Webhook, _ = backend.DecodeWebhook(m["wh"]) // written by EncodeWebhook: always decodes
	if pu := micros(m["pu"]); pu.After(now) {
		p.PausedUntil = pu
	}
	return p
}

// groupRetention is how long a done group is kept: as long as the
// longest-kept of its jobs, so its progress outlives them; negative
// (forever) when any final state is kept forever.
func groupRetention(r queue.Retention) time.Duration {
	keep := time.Duration(0)
	for _, d := range []time.Duration{r.Completed, r.Failed, r.Cancelled} {
		if d < 0 {
			return -1
		}
		keep = max(keep, d)
	}
	return keep
}

// cleanGroups deletes groups done longer than the retention ago, at most
// limit.
func (b *Backend) cleanGroups(ctx context.Context, r queue.Retention, limit int) error {
	keep := groupRetention(r)
	if b.schedPrefix == "" || keep < 0 {
		return nil
	}
	_, args := b.group(nil, 2)
	_, err := b.eval(ctx, "cleanup", scriptCleanGroups, nil, append(args, us(keep), limit)...)
	return err
}
