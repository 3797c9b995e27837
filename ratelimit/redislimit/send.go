package redislimit

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A segment is one script run: the calls it decides, in order, with their
// keys and arguments joined as decide.lua expects.
type segment struct {
	calls []*call
	keys  []string
	args  []any
}

// exec runs batch and completes every call in it. Calls whose context is
// already done are answered with its error and not sent, so an abandoned
// call does not move a counter. The others go out as one script run when
// they can share one (same time argument, not a cluster client), else as
// one pipeline of script runs.
func (b *batcher) exec(batch []*call) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			b.finish(c, nil, err)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	segs := b.segments(live)
	cmds := b.send(segs)
	for i, seg := range segs {
		b.deliver(seg, cmds[i])
	}
}

// segments splits calls into script runs: one per call without combining,
// else one per distinct time argument (a single one unless time is
// injected).
func (b *batcher) segments(calls []*call) []segment {
	if !b.combine {
		segs := make([]segment, len(calls))
		for i := range calls {
			segs[i] = b.segment(calls[i : i+1 : i+1])
		}
		return segs
	}
	var segs []segment
	for rest := calls; len(rest) > 0; {
		var same, other []*call
		for _, c := range rest {
			if c.now == rest[0].now {
				same = append(same, c)
			} else {
				other = append(other, c)
			}
		}
		segs = append(segs, b.segment(same))
		rest = other
	}
	return segs
}

// segment joins calls into one script run's keys and arguments.
func (b *batcher) segment(calls []*call) segment {
	nkeys := 0
	for _, c := range calls {
		nkeys += len(c.keys)
	}
	keys := make([]string, 0, nkeys)
	args := make([]any, 0, 3+len(calls)+5*nkeys)
	args = append(args, calls[0].now, b.minTTL, len(calls))
	for _, c := range calls {
		args = append(args, len(c.keys))
	}
	for _, c := range calls {
		keys = append(keys, c.keys...)
		args = append(args, c.args...)
	}
	return segment{calls: calls, keys: keys, args: args}
}

// send runs segs: a single one directly (under its call's own context when
// it holds one call), several as one pipeline. A server that lost its script
// cache (restart, failover, SCRIPT FLUSH) gets the source again by EVAL.
func (b *batcher) send(segs []segment) []*redis.Cmd {
	if len(segs) == 1 {
		ctx := b.ctx
		if len(segs[0].calls) == 1 {
			ctx = segs[0].calls[0].ctx
		}
		return []*redis.Cmd{decideScript.Run(ctx, b.client, segs[0].keys, segs[0].args...)}
	}
	cmds := b.pipeline(segs, false)
	var retry []segment
	var at []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			retry, at = append(retry, segs[i]), append(at, i)
		}
	}
	if len(retry) > 0 {
		for j, cmd := range b.pipeline(retry, true) {
			cmds[at[j]] = cmd
		}
	}
	return cmds
}

func (b *batcher) pipeline(segs []segment, eval bool) []*redis.Cmd {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(segs))
	for i, s := range segs {
		if eval {
			cmds[i] = decideScript.Eval(b.ctx, pipe, s.keys, s.args...)
		} else {
			cmds[i] = decideScript.EvalSha(b.ctx, pipe, s.keys, s.args...)
		}
	}
	// Exec's error is the first command's; each command keeps its own.
	_, _ = pipe.Exec(b.ctx)
	return cmds
}

// deliver hands each call of seg its part of the reply, or the run's error.
func (b *batcher) deliver(seg segment, cmd *redis.Cmd) {
	reply, err := cmd.Int64Slice()
	if err == nil && len(reply) != replyWidth*len(seg.keys) {
		err = fmt.Errorf("malformed reply: %d integers for %d requests", len(reply), len(seg.keys))
	}
	off := 0
	for _, c := range seg.calls {
		if err != nil {
			b.finish(c, nil, err)
			continue
		}
		n := replyWidth * len(c.keys)
		b.finish(c, reply[off:off+n:off+n], nil)
		off += n
	}
}

func (b *batcher) finish(c *call, reply []int64, err error) {
	c.reply, c.err = reply, err
	c.done <- struct{}{}
}
