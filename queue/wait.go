package queue

import (
	"context"
)

// Wait returns the job once it is in a final state (completed, failed or
// cancelled), whichever it is: a failed job is a result, not an error
// (look at Job.State and Job.LastError). It reads the job at once and
// returns it when final; otherwise it waits, woken by the backend's event
// log when it keeps one (Features.Events), else by a poll.
//
// All Wait calls of a client share one reader: many callers waiting on one
// job, or one caller waiting on many jobs, cost one store read per event
// (or per poll) for each job waited on, not one per caller.
//
// Errors: ErrNotFound when the job does not exist (or is deleted while
// waited on); a store fault of a read; and when ctx ends first, the job as
// last read (not final) together with ctx's error, so a caller bounding
// the wait with a deadline still has the job as it is.
func (c *Client) Wait(ctx context.Context, id string) (*Job, error) {
	w := c.hub.get(c)
	wt := &waiter{ch: make(chan waited, 1)}
	if err := w.join(ctx, w.jobs, id, wt); err != nil {
		return endedEarly(ctx, err, func(ctx context.Context) (*Job, error) { return c.b.Get(ctx, id) },
			func(j *Job) bool { return j.State.Final() })
	}
	defer w.part(w.jobs, id, wt)
	// Read after joining: an event after this read wakes the waiter. The
	// read outlives ctx, so that a short wait still answers with the job.
	last, err := c.b.Get(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil, err
	}
	for !last.State.Final() {
		select {
		case v := <-wt.ch:
			if v.err != nil {
				return nil, v.err
			}
			last = v.job
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
	return last, nil
}

// GroupFinal reports whether a group is over: done (every job final), or
// cancelled with no job left running.
func GroupFinal(g *GroupProgress) bool {
	return g.Done || (g.CancelRequested && g.Unfinished() == 0)
}

// WaitGroup returns the group once it is over (GroupFinal), as Wait does
// for a job: ErrGroupNotFound for an unknown group, an error matching
// ErrUnsupported on a backend without groups, and the group as last read
// together with ctx's error when ctx ends first.
func (c *Client) WaitGroup(ctx context.Context, id string) (*GroupProgress, error) {
	gb, err := c.groups()
	if err != nil {
		return nil, err
	}
	w := c.hub.get(c)
	wt := &waiter{ch: make(chan waited, 1)}
	if err := w.join(ctx, w.grps, id, wt); err != nil {
		return endedEarly(ctx, err, func(ctx context.Context) (*GroupProgress, error) { return gb.Group(ctx, id) }, GroupFinal)
	}
	defer w.part(w.grps, id, wt)
	last, err := gb.Group(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil, err
	}
	for !GroupFinal(last) {
		select {
		case v := <-wt.ch:
			if v.err != nil {
				return nil, v.err
			}
			last = v.group
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
	return last, nil
}

// endedEarly answers a wait whose watcher could not start (err). When ctx
// ended meanwhile (a short wait on a slow store), the wait still answers
// as it would have: with a read of the thing as it is, and ctx's error
// unless it is final. Any other start failure is the answer.
func endedEarly[T any](ctx context.Context, err error, read func(context.Context) (*T, error), final func(*T) bool) (*T, error) {
	if ctx.Err() == nil {
		return nil, err
	}
	v, rerr := read(context.WithoutCancel(ctx))
	if rerr != nil {
		return nil, rerr
	}
	if final(v) {
		return v, nil
	}
	return v, ctx.Err()
}
