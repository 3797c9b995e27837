package redisqueue

import (
	"context"

	"github.com/sluicehq/sluice/queue"
)

// Retry implements backend.Retrier in one script (lua/retry.lua). The job
// becomes ready through the same step as every other job that does, so
// whatever holds ready jobs back holds this one too.
func (b *Backend) Retry(ctx context.Context, id string) (*queue.Job, error) {
	seq, q, err := parseID(id)
	if err != nil {
		return nil, err
	}
	k := b.keys.queue(q)
	keys, args := b.group([]*qkeys{k}, 1)
	keys = append(keys, k.jobKey(seq), k.errorsKey(seq))
	res, err := b.eval(ctx, "retry", scriptRetry, keys, append(args, seq)...)
	if err != nil {
		return nil, err
	}
	l, err := asList(res, "retry reply")
	if err != nil || len(l) == 0 {
		return nil, b.fault("retry", errReply{"retry reply"})
	}
	switch code := asString(l[0]); {
	case code == codeNotFound:
		return nil, queue.ErrNotFound
	case code == "state" && len(l) == 2:
		return nil, &queue.NotRetryableError{ID: id, State: queue.State(asString(l[1]))}
	case code == "group" && len(l) == 3:
		return nil, &queue.NotRetryableError{ID: id, State: queue.State(asString(l[1])), Group: asString(l[2])}
	case code == "parent" && len(l) == 4:
		return nil, &queue.NotRetryableError{ID: id, State: queue.State(asString(l[1])),
			Parent: asString(l[2]), ParentState: queue.State(asString(l[3]))}
	case code == "dup" && len(l) == 3:
		return nil, &queue.DuplicateError{ID: id, Holder: k.id(asString(l[1])), Queue: q, Key: asString(l[2])}
	case code != codeOK || len(l) != 3:
		return nil, b.fault("retry", errReply{"retry reply"})
	}
	j, err := decodeJob(k, seq, l[1])
	if err != nil || j == nil {
		return nil, b.fault("retry", errReply{"retry reply"})
	}
	woken, _ := l[2].([]any)
	b.wakeLocal([]*qkeys{k}, woken)
	b.registerAfter(ctx, []*qkeys{k})
	return j, nil
}
