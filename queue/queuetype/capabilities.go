package queuetype

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// Capability is one optional feature of a backend.Backend. Backends differ: the
// SQLite and Redis backends have every one; a high-throughput lane on a
// message broker trades some of them for speed. A backend declares what it
// has in its Features; asking a backend for a feature it lacks returns an
// *UnsupportedError (matching ErrUnsupported), never a silent no-op.
type Capability uint32

// The capabilities a backend may have.
const (
	// CapUnique: JobSpec.UniqueKey and UniqueFor deduplicate enqueues.
	CapUnique Capability = 1 << iota
	// CapList: backend.Backend.List pages through every job.
	CapList
	// CapCancelPending: Cancel stops a job that has not started yet, and
	// reaches a running job from any process.
	CapCancelPending
	// CapTenants: the tenant scheduler may hold jobs back (StateWaiting)
	// for per-tenant limits and fairness (backend.Features.Tenants).
	// JobSpec.Tenant is recorded by every backend; only scheduling by it
	// needs this capability.
	CapTenants
	// CapGroups: JobSpec.Group ties jobs together for per-group limits and
	// completion (backend.Features.Groups).
	CapGroups
	// CapPriority: JobSpec.Priority orders ready jobs.
	CapPriority
	// CapDelay: JobSpec.RunAt, Snooze and retry backoff delay a job.
	CapDelay
	// CapStrictOrder: ready jobs leave exactly by (Priority, enqueue
	// order), and a retried, snoozed or requeued job keeps its place.
	CapStrictOrder
	// CapClockDelays: delayed jobs become due exactly when the backend's
	// clock says so (a fake clock drives them in tests). A backend that
	// delays on a broker's own timers lacks it.
	CapClockDelays
	// CapAtomicBatch: Enqueue stores a whole batch or nothing.
	CapAtomicBatch
	// CapRetry: a failed or cancelled job can be made ready again
	// (backend.Features.Retry, queue.Client.Retry).
	CapRetry
	// CapTenantList: every tenant with jobs or settings can be listed
	// with its counts (backend.Features.TenantList, queue.Client.Tenants).
	CapTenantList
	// CapFlows: jobs may depend on others (JobSpec.DependsOn,
	// queue.Client.EnqueueFlow) and wait blocked until they complete
	// (backend.Features.Flows).
	CapFlows
	// CapSchedules: recurring schedules are kept in the store and their
	// ticks claimed there (backend.Features.Schedules, queue.Client.SetSchedule).
	CapSchedules
	// CapProgress: a running job's progress is recorded
	// (backend.Features.Progress, queue.ReportProgress).
	CapProgress
	// CapEvents: the backend keeps an event log read by cursor
	// (backend.Features.Events, queue.Client.Subscribe).
	CapEvents

	capEnd // one past the last capability
)

// Capabilities is a set of Capability values.
type Capabilities uint32

// AllCapabilities is the set of every capability.
const AllCapabilities = Capabilities(capEnd - 1)

// NewCapabilities returns the set of cs.
func NewCapabilities(cs ...Capability) Capabilities {
	var s Capabilities
	for _, c := range cs {
		s |= Capabilities(c)
	}
	return s
}

// Has reports whether s contains every capability in c.
func (s Capabilities) Has(c Capability) bool { return Capabilities(c)&^s == 0 }

// Without returns s minus cs.
func (s Capabilities) Without(cs ...Capability) Capabilities {
	return s &^ NewCapabilities(cs...)
}

// List returns the capabilities in s, in declaration order.
func (s Capabilities) List() []Capability {
	out := make([]Capability, 0, bits.OnesCount32(uint32(s)))
	for c := Capability(1); c < capEnd; c <<= 1 {
		if s.Has(c) {
			out = append(out, c)
		}
	}
	return out
}

// String lists the capabilities by name, such as "unique keys, listing".
func (s Capabilities) String() string {
	l := s.List()
	names := make([]string, len(l))
	for i, c := range l {
		names[i] = c.String()
	}
	return strings.Join(names, ", ")
}

var capNames = map[Capability]string{
	CapUnique:        "unique keys",
	CapList:          "listing jobs",
	CapCancelPending: "cancelling jobs that have not started",
	CapTenants:       "tenant scheduling",
	CapGroups:        "job groups",
	CapPriority:      "priorities",
	CapDelay:         "delayed jobs",
	CapStrictOrder:   "strict priority and FIFO order",
	CapClockDelays:   "delays on the backend clock",
	CapAtomicBatch:   "atomic batch enqueue",
	CapRetry:         "retrying finished jobs",
	CapTenantList:    "listing tenants",
	CapFlows:         "job flows (dependencies between jobs)",
	CapSchedules:     "schedules",
	CapProgress:      "job progress",
	CapEvents:        "an event log",
}

// String names the capability, such as "unique keys".
func (c Capability) String() string {
	if n, ok := capNames[c]; ok {
		return n
	}
	return fmt.Sprintf("capability(%#x)", uint32(c))
}

// ErrUnsupported is matched (errors.Is) by every *UnsupportedError.
var ErrUnsupported = errors.New("queue: unsupported by the backend")

// UnsupportedError says that a backend lacks a feature a call or a job
// asked for. Nothing was stored or changed.
type UnsupportedError struct {
	// Backend names the backend, such as "amqpqueue".
	Backend string
	// Feature is the missing capability.
	Feature Capability
	// Field is the JobSpec field that asked for it, such as
	// "JobSpec.UniqueKey"; empty when a method call asked for it.
	Field string
	// Path is Field in parts (zero when Field is empty).
	Path FieldPath
}

func (e *UnsupportedError) Error() string {
	b := e.Backend
	if b == "" {
		b = "the backend"
	}
	msg := "queue: " + b + " does not support " + e.Feature.String()
	if e.Field != "" {
		msg += " (" + e.Field + " is set)"
	}
	return msg
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }
