package redisqueue

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// call is one script run waiting for its turn.
type call struct {
	script *redis.Script
	keys   []string
	// args are the script's arguments; with items, they are followed by
	// the number of items and each item's arguments.
	args  []any
	items [][]any
	// tail follows the items (the outbox's arguments, see
	// Backend.outboxArgs).
	tail []any
	// mergeKey, when set, lets calls with the same key that go out in one
	// pipeline run as one script over all their items (the script, keys
	// and args of such calls are the same). split then gives each call
	// its part of the merged reply: the reply for n items from item from.
	mergeKey string
	split    func(res any, from, n int) (any, error)
	// timed marks an enqueue that may add timed work (see Backend.bump).
	timed bool
	// linger, when positive, is how long the call may wait in line for
	// other traffic to go out with (see batcher.linger).
	linger time.Duration

	res  any
	err  error
	done chan struct{}
}

// argv returns the script arguments of the call.
func (c *call) argv() []any {
	if c.items == nil {
		if c.tail == nil {
			return c.args
		}
		return append(c.args[:len(c.args):len(c.args)], c.tail...)
	}
	n := len(c.args) + 1 + len(c.tail)
	for _, it := range c.items {
		n += len(it)
	}
	out := append(make([]any, 0, n), c.args...)
	out = append(out, len(c.items))
	for _, it := range c.items {
		out = append(out, it...)
	}
	return append(out, c.tail...)
}

// merged is one script run of a pipeline: a call, or several mergeable
// calls run as one.
type merged struct {
	run     *call
	members []*call
}

// merge groups a batch: calls with the same merge key become one run.
func merge(batch []*call) []merged {
	out := make([]merged, 0, len(batch))
	at := map[string]int{}
	for _, c := range batch {
		if c.mergeKey == "" {
			out = append(out, merged{run: c, members: []*call{c}})
			continue
		}
		if i, ok := at[c.mergeKey]; ok {
			out[i].members = append(out[i].members, c)
			continue
		}
		at[c.mergeKey] = len(out)
		out = append(out, merged{run: c, members: []*call{c}})
	}
	for i, m := range out {
		if len(m.members) == 1 {
			continue
		}
		run := *m.members[0]
		run.items = nil
		for _, c := range m.members {
			run.items = append(run.items, c.items...)
		}
		out[i].run = &run
	}
	return out
}

// finish hands the run's reply to its members and wakes them.
func (m merged) finish(res any, err error) {
	if len(m.members) == 1 && m.run == m.members[0] {
		m.run.res, m.run.err = res, err
		close(m.run.done)
		return
	}
	from := 0
	for _, c := range m.members {
		if err != nil {
			c.err = err
		} else {
			c.res, c.err = c.split(res, from, len(c.items))
		}
		from += len(c.items)
		close(c.done)
	}
}

// batcher sends concurrent script runs together. At most `senders`
// pipelines are in flight. A call that finds a free slot is sent at once
// by its own goroutine, together with any calls waiting (so a lone call
// costs no hand-off to another goroutine); a call that finds every slot
// busy waits in line, and when a pipeline returns, the calls in line go
// out as the next pipeline, up to max at a time. Under load that is one
// round trip and two system calls for many calls instead of one each.
// Each script in a pipeline is still its own atomic step.
type batcher struct {
	r       *runner
	max     int
	senders int

	mu     sync.Mutex
	idle   sync.Cond // signalled when active drops to 0
	line   []*call
	active int // pipelines being sent (each holds a slot until the line is empty)
	closed bool
	// urgent counts the calls in line that do not linger; overdue is set
	// when a lingering call's time ran out while every slot was busy, and
	// timer is the running timer of the calls lingering now.
	urgent  int
	overdue bool
	timer   *time.Timer
}

func newBatcher(r *runner, max, senders int) *batcher {
	b := &batcher{r: r, max: max, senders: senders}
	b.idle.L = &b.mu
	return b
}

// run sends the call, or queues it, and waits for its result or ctx.
func (b *batcher) run(ctx context.Context, c *call) (any, error) {
	c.done = make(chan struct{})
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errClosed
	}
	if c.linger > 0 && len(b.line)-b.urgent < lingerMax-1 {
		return b.linger(ctx, c)
	}
	c.linger = 0 // goes as any other call, with those lingering
	if b.active < b.senders {
		b.active++
		batch := append(b.take(b.max-1), c)
		b.mu.Unlock()
		sctx := context.Background()
		if len(batch) == 1 {
			sctx = ctx // nobody else waits on this send
		}
		b.send(sctx, batch)
		b.next()
		return c.res, c.err
	}
	b.line = append(b.line, c)
	b.urgent++
	b.mu.Unlock()
	return c.wait(ctx)
}

// wait waits for the call's result or the end of ctx.
func (c *call) wait(ctx context.Context) (any, error) {
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The call stays in line and will run; only the wait ends.
		return nil, ctx.Err()
	}
}

// lingerMax is how many calls may linger in line: the one that would
// make it more sends them all. Under load they are many at once, and
// their own pipeline then runs beside the others' instead of waiting to
// ride with them.
const lingerMax = 16

// linger puts c in line to go out with the next pipeline anyone sends,
// or after c.linger at the latest: a write nobody waits on (a worker's
// completion) then costs no round trip of its own while other traffic
// flows. Called with mu held; it unlocks it.
func (b *batcher) linger(ctx context.Context, c *call) (any, error) {
	b.line = append(b.line, c)
	b.arm()
	b.mu.Unlock()
	return c.wait(ctx)
}

// arm starts the timer of the first call lingering in line unless one
// runs. Called with mu held.
func (b *batcher) arm() {
	if b.timer == nil && len(b.line) > 0 {
		b.timer = time.AfterFunc(b.line[0].linger, b.lingerOver)
	}
}

// sendLine sends the line (up to max calls) as a pipeline of its own,
// then hands on what is left. Called with mu held; it unlocks it.
func (b *batcher) sendLine() {
	b.active++
	batch := b.take(b.max)
	b.mu.Unlock()
	b.send(context.Background(), batch)
	b.next()
}

// lingerOver sends the calls in line when their time is up, or marks
// them overdue for the next pipeline to return when every slot is busy.
func (b *batcher) lingerOver() {
	b.mu.Lock()
	b.timer = nil
	if len(b.line) == 0 {
		b.mu.Unlock()
		return
	}
	if b.active >= b.senders {
		b.overdue = true
		b.mu.Unlock()
		return
	}
	b.sendLine()
}

// lingering takes the calls in line when all of them linger, for a
// caller about to send a call of its own outside the batcher (see
// Backend.direct). It counts as a pipeline in flight until done is called.
func (b *batcher) lingering() (batch []*call, done func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.line) == 0 || b.urgent > 0 || b.closed {
		return nil, nil
	}
	b.active++
	return b.take(b.max), b.next
}

// take removes up to n calls from the front of the line. Called with mu
// held.
func (b *batcher) take(n int) []*call {
	n = min(n, len(b.line))
	batch := make([]*call, n, n+1)
	copy(batch, b.line)
	clear(b.line[:n])
	b.line = b.line[n:]
	for _, c := range batch {
		if c.linger <= 0 {
			b.urgent--
		}
	}
	if len(b.line) == 0 {
		b.overdue = false
		// The next lingering call gets its whole time. A timer already
		// firing finds the line empty, or sends a newer call early.
		if b.timer != nil {
			b.timer.Stop()
			b.timer = nil
		}
	}
	return batch
}

// next hands the calls in line to a new sender, or frees the slot. Calls
// that only linger stay in line for their time.
func (b *batcher) next() {
	b.mu.Lock()
	if b.urgent == 0 && !b.overdue && !(b.closed && len(b.line) > 0) {
		b.arm()
		if b.active--; b.active == 0 {
			b.idle.Broadcast()
		}
		b.mu.Unlock()
		return
	}
	batch := b.take(b.max)
	b.mu.Unlock()
	go func() {
		b.send(context.Background(), batch)
		b.next()
	}()
}

// send runs the batch: merges what can be merged, then sends one run
// directly or several as one pipeline. Scripts the server does not know
// yet (NOSCRIPT, or the function library missing) are run again one by
// one, which loads them. ctx bounds the send; it is the caller's own only when the batch
// is its call alone.
func (b *batcher) send(ctx context.Context, batch []*call) {
	runs := merge(batch)
	if len(runs) == 1 {
		r := runs[0].run
		runs[0].finish(b.r.run(ctx, r.script, r.keys, r.argv()))
		return
	}
	pipe := b.r.client.Pipeline()
	cmds := make([]*redis.Cmd, len(runs))
	for i, m := range runs {
		cmds[i] = b.r.queue(ctx, pipe, m.run.script, m.run.keys, m.run.argv())
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for i, m := range runs {
		res, err := cmds[i].Result()
		if err != nil {
			res, err = b.r.again(ctx, m.run.script, m.run.keys, m.run.argv(), err)
		}
		m.finish(res, err)
	}
}

// close refuses new calls and waits until every call in flight or in
// line has been sent and answered; calls lingering in line go at once.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	if len(b.line) > 0 && b.active == 0 {
		b.sendLine()
		b.mu.Lock()
	}
	for b.active > 0 {
		b.idle.Wait()
	}
	b.mu.Unlock()
}
