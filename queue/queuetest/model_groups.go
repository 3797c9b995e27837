package queuetest

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/queue"
)

// The model test's groups: a few are open to new jobs at a time, and one
// that is done or cancelled is replaced by a new one, so groups keep
// being created, filled, limited and completed.

// modelOpenGroups is how many groups take new jobs at a time.
const modelOpenGroups = 3

// rotate replaces the open groups that closed with new ones.
func (r *modelRun) rotate() {
	var keep []string
	for _, id := range r.open {
		p, _, err := r.m.Group(r.now(), id)
		if err != nil || !(p.Done || p.CancelRequested) {
			keep = append(keep, id)
		}
	}
	r.open = keep
	for len(r.open) < modelOpenGroups {
		id := fmt.Sprintf("g%d", r.nextGroup)
		r.nextGroup++
		r.open = append(r.open, id)
		r.groups = append(r.groups, id)
		if r.rng.IntN(5) > 0 { // else its first job creates it, with no limits
			r.createGroupID(id)
		}
	}
}

// someGroup returns an open group, or now and then any group named so far
// (a closed one refuses the job).
func (r *modelRun) someGroup() string {
	if r.rng.IntN(20) == 0 {
		return r.groups[r.rng.IntN(len(r.groups))]
	}
	return r.open[r.rng.IntN(len(r.open))]
}

// createGroup creates a group named before: both must refuse it.
func (r *modelRun) createGroup() bool {
	return r.createGroupID(r.groups[r.rng.IntN(len(r.groups))])
}

// createGroupID creates group id with random limits, on both.
func (r *modelRun) createGroupID(id string) bool {
	spec := queue.GroupSpec{ID: id, MaxConcurrency: r.rng.IntN(3)}
	if r.rng.IntN(2) == 0 {
		spec.Tenant = modelCompletion
	}
	if r.rng.IntN(5) < 2 {
		spec.MinInterval = r.micro(100*time.Millisecond, 2*time.Second)
	}
	if r.rng.IntN(5) == 0 {
		spec.TTL = r.free(2*time.Second, 8*time.Second)
	}
	if r.rng.IntN(5) < 3 {
		spec.CompletionKind, spec.CompletionQueue = modelDone, modelQ2
	}
	m := r.m.Clone()
	wantErr := m.CreateGroup(r.now(), spec)
	if r.leftOpen(m, "create group") {
		return false
	}
	_, err := r.h.Client.CreateGroup(r.ctx, spec)
	r.logf("create group %+v: %v", spec, err)
	r.sameErr("CreateGroup", err, wantErr)
	r.commit(m)
	return true
}

func (r *modelRun) cancelGroup() bool {
	id := r.someGroup()
	m := r.m.Clone()
	wantErr := m.CancelGroup(r.now(), id)
	if r.leftOpen(m, "cancel group") {
		return false
	}
	_, err := r.h.Client.CancelGroup(r.ctx, id)
	r.logf("cancel group %s: %v", id, err)
	r.sameErr("CancelGroup", err, wantErr)
	r.commit(m)
	return true
}
