package backend

import "github.com/sluicehq/sluice/queue/queuetype"

// Features is what a backend says about itself (Backend.Features): its
// name, the capabilities of its Backend methods, and the optional parts it
// serves. It is the one way to ask a backend for an optional feature: a
// part is there when its field is not nil, and only then.
//
// Code that needs a part asks for it here (b.Features().Tenants), never by
// a type assertion (b.(TenantBackend)): a type may have a part's methods
// without serving it. A Redis backend on a Cluster client has the methods
// of TenantBackend and answers ErrUnsupported from them; a router has them
// all and forwards them to a default backend that may lack them; a
// backend opened with its outbox off answers ErrOutboxOff. Their Features
// leave those parts out.
//
// A wrapper that embeds a Backend inherits its Features, whose parts are
// the wrapped backend's: calls through them skip the wrapper. A wrapper
// that must see those calls too returns Features naming its own parts.
type Features struct {
	// Name names the backend in errors and logs, such as "sqlitequeue".
	// Required.
	Name string
	// Capabilities are the backend's capabilities. Those of the parts
	// below (CapTenants, CapGroups, CapRetry, CapTenantList) follow the
	// parts, whatever this field says: a part that is there brings its
	// capability, one that is nil takes it away (see CapabilitiesOf). A
	// backend with every capability of its Backend methods sets
	// AllCapabilities.
	Capabilities queuetype.Capabilities

	// Tenants schedules by tenant: limits, the fair order, pauses
	// (CapTenants).
	Tenants TenantBackend
	// TenantList lists every tenant with its counts (CapTenantList).
	TenantList TenantLister
	// Groups ties jobs into groups with limits and completion (CapGroups).
	Groups GroupBackend
	// Retry makes a failed or cancelled job ready again (CapRetry).
	Retry Retrier
	// Schedules keeps recurring schedules and claims their ticks
	// (CapSchedules).
	Schedules ScheduleStore
	// Outbox records events in the transitions' own atomic steps. Nil
	// when the backend records none, including when it was opened with
	// its outbox off.
	Outbox Outbox
	// Notify wakes idle workers when jobs may have become ready; without
	// it workers only poll.
	Notify Notifier
	// Flows stores jobs that depend on others and reads their graphs
	// (CapFlows).
	Flows FlowBackend
	// TenantSecrets keeps the tenants' webhook signing secrets. Nil
	// when the backend keeps none.
	TenantSecrets TenantSecrets
	// Progress records a running job's progress (CapProgress).
	Progress ProgressBackend
	// Events keeps a log of what happens to jobs and groups that readers
	// follow by cursor (Client.Subscribe, Client.Wait): nil when the
	// backend keeps none, including when it was opened with it off.
	Events EventLog
	// Router places queues on other backends (package queue/mux): what
	// concerns one queue is asked of the backend holding it. Nil for a
	// backend that holds every queue itself.
	Router Router
}

// partCaps are the capabilities that come from the parts of Features.
const partCaps = queuetype.Capabilities(queuetype.CapTenants | queuetype.CapGroups | queuetype.CapRetry | queuetype.CapTenantList | queuetype.CapFlows | queuetype.CapSchedules | queuetype.CapProgress | queuetype.CapEvents)

// Effective returns f.Capabilities with the parts' capabilities set by
// the parts.
func (f Features) Effective() queuetype.Capabilities {
	c := f.Capabilities &^ partCaps
	parts := []struct {
		there bool
		cap   queuetype.Capability
	}{
		{f.Tenants != nil, queuetype.CapTenants}, {f.Groups != nil, queuetype.CapGroups},
		{f.Retry != nil, queuetype.CapRetry}, {f.TenantList != nil, queuetype.CapTenantList},
		{f.Flows != nil, queuetype.CapFlows},
		{f.Schedules != nil, queuetype.CapSchedules},
		{f.Progress != nil, queuetype.CapProgress}, {f.Events != nil, queuetype.CapEvents},
	}
	for _, p := range parts {
		if p.there {
			c |= queuetype.Capabilities(p.cap)
		}
	}
	return c
}

// CapabilitiesOf returns the capabilities b declares in its Features, with
// those of the optional parts (CapTenants, CapGroups, CapRetry,
// CapTenantList) set exactly when the part is there.
func CapabilitiesOf(b Backend) queuetype.Capabilities { return b.Features().Effective() }

// specNeed is a JobSpec field that asks for a capability when set.
type specNeed struct {
	set   bool
	cap   queuetype.Capability
	field queuetype.FieldPath
}

// specNeeds lists the JobSpec fields that ask for a capability: the rule
// CheckSpecs applies.
func specNeeds(s queuetype.JobSpec) [5]specNeed {
	return [5]specNeed{
		{s.UniqueKey != "", queuetype.CapUnique, queuetype.Field("JobSpec", "UniqueKey")},
		{s.Group != "", queuetype.CapGroups, queuetype.Field("JobSpec", "Group")},
		{s.Priority > 0, queuetype.CapPriority, queuetype.Field("JobSpec", "Priority")},
		{!s.RunAt.IsZero(), queuetype.CapDelay, queuetype.Field("JobSpec", "RunAt")},
		{len(s.DependsOn) > 0, queuetype.CapFlows, queuetype.Field("JobSpec", "DependsOn")},
	}
}

// specCaps are the capabilities a spec can ask for.
const specCaps = queuetype.Capabilities(queuetype.CapUnique | queuetype.CapGroups | queuetype.CapPriority | queuetype.CapDelay | queuetype.CapFlows)

// CheckSpecs returns an *UnsupportedError naming the first field of specs
// that asks for a capability the backend lacks, or nil:
//
//   - UniqueKey needs CapUnique;
//   - Group needs CapGroups;
//   - Priority > 0 needs CapPriority;
//   - a non-zero RunAt needs CapDelay;
//   - DependsOn needs CapFlows.
//
// The field is prefixed with the spec's index when there is more than one
// spec. Tenant needs nothing: every backend records it; scheduling by
// tenant needs CapTenants, which whoever configures tenant limits checks.
//
// Client.EnqueueBatch runs this check against the backend that holds each
// spec's queue (see Router) before calling Enqueue, so a backend may assume
// its specs ask only for what it has. A backend that can be called without
// a Client and wants to refuse such specs itself calls it at the top of
// Enqueue; it checks f alone, without following f.Router.
func (f Features) CheckSpecs(specs []queuetype.JobSpec) error {
	caps := f.Effective()
	if caps&specCaps == specCaps {
		return nil
	}
	for i, s := range specs {
		if err := checkSpec(caps, f.Name, s, i, len(specs)); err != nil {
			return err
		}
	}
	return nil
}

// checkSpec checks spec i of n against caps.
func checkSpec(caps queuetype.Capabilities, name string, s queuetype.JobSpec, i, n int) error {
	for _, need := range specNeeds(s) {
		if !need.set || caps.Has(need.cap) {
			continue
		}
		at := need.field
		if n > 1 {
			at = at.At("specs", i)
		}
		return &queuetype.UnsupportedError{Backend: name, Feature: need.cap, Field: at.String(), Path: at}
	}
	return nil
}

// CheckPlaced runs the check of Features.CheckSpecs on each spec against
// the backend that holds its queue (b, or b's route for it).
func CheckPlaced(b Backend, specs []queuetype.JobSpec) error {
	f := b.Features()
	if f.Router == nil {
		return f.CheckSpecs(specs)
	}
	byQueue := map[string]Features{} // a batch holds few queues
	for i, s := range specs {
		at, ok := byQueue[s.Queue]
		if !ok {
			at = Placed(b, s.Queue).Features()
			byQueue[s.Queue] = at
		}
		if err := checkSpec(at.Effective(), at.Name, s, i, len(specs)); err != nil {
			return err
		}
	}
	return nil
}
