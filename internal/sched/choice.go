package sched

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"
)

// Choice is an outcome of the last operation that the contract does not
// fix: the backends may differ there (see the package doc).
type Choice struct {
	// Op is the operation, such as "Lease".
	Op string
	// What says what was left open.
	What string
}

func (c Choice) String() string { return c.Op + ": " + c.What }

// Choices returns what the last operation left open; empty when its whole
// outcome follows from the contract.
func (m *Model) Choices() []Choice { return slices.Clone(m.choices) }

// step is the bookkeeping of one operation: the time it runs at and the
// scopes it owes a fill or a completion check, in the order it asked.
type step struct {
	now                time.Time
	fillT, fillG, done []string
	completions        int
}

func addOnce(list []string, name string) []string {
	if name == "" || slices.Contains(list, name) {
		return list
	}
	return append(list, name)
}

// note records a choice the running operation made.
func (m *Model) note(op, format string, args ...any) {
	if !m.variant {
		m.choices = append(m.choices, Choice{Op: op, What: fmt.Sprintf(format, args...)})
	}
}

// run runs operation fn at now, settles what it left behind, and runs it
// again on a copy taken before, with every open order the other way: when
// the two outcomes differ, the operation made a choice.
func (m *Model) run(op string, now time.Time, fn func(m *Model) (any, error)) (any, error) {
	before := m.Clone()
	m.choices = nil
	res, err := m.exec(now, fn)
	alt := before
	alt.variant = true
	altRes, altErr := alt.exec(now, fn)
	if !sameOutcome(m, alt) || !reflect.DeepEqual(res, altRes) || fmt.Sprint(err) != fmt.Sprint(altErr) {
		m.note(op, "the outcome depends on an order the contract leaves open")
	}
	return res, err
}

func (m *Model) exec(now time.Time, fn func(m *Model) (any, error)) (any, error) {
	m.step = &step{now: now}
	defer func() { m.step = nil }()
	res, err := fn(m)
	if err == nil {
		m.settle()
	}
	return res, err
}

// settle does what the operation's moves left behind: it fills the
// tenants, then the groups that got room, then completes the groups that
// may be done, until nothing more is owed.
func (m *Model) settle() {
	s := m.step
	for len(s.fillT)+len(s.fillG)+len(s.done) > 0 {
		ts, gs, ds := s.fillT, s.fillG, s.done
		s.fillT, s.fillG, s.done = nil, nil, nil
		if m.variant {
			slices.Reverse(ts)
			slices.Reverse(gs)
			slices.Reverse(ds)
		}
		for _, t := range ts {
			m.fillTenant(t)
		}
		for _, g := range gs {
			m.fillGroup(g)
		}
		for _, g := range ds {
			m.completeGroup(g)
		}
	}
}

// settleEach is called after each group a Lease cancels past its TTL, a
// multi-job step the backends settle differently: the variant settles
// there, the canonical order once at the end.
func (m *Model) settleEach() {
	if m.variant {
		m.settle()
	}
}

// sameOutcome reports whether two models hold the same jobs, groups and
// fair state.
func sameOutcome(a, b *Model) bool {
	if a.seq != b.seq || a.leases != b.leases || len(a.jobs) != len(b.jobs) {
		return false
	}
	for id, j := range a.jobs {
		k, ok := b.jobs[id]
		if !ok || !reflect.DeepEqual(j, k) {
			return false
		}
	}
	for id, g := range a.groups {
		h, ok := b.groups[id]
		if !ok || !reflect.DeepEqual(g, h) {
			return false
		}
	}
	for n, q := range a.queues {
		r, ok := b.queues[n]
		if !ok && (q.vtime != 0 || len(q.finish) > 0) {
			return false
		}
		if ok && (q.vtime != r.vtime || !maps.Equal(q.finish, r.finish)) {
			return false
		}
	}
	return len(a.groups) == len(b.groups)
}
