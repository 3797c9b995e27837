package redisqueue

import "strings"

// SetListBudget changes how many jobs List looks at per queue and call,
// so tests can reach the short-page path with few jobs. It returns a
// function that restores the old value.
func SetListBudget(n int) (restore func()) {
	old := listBudget
	listBudget = n
	return func() { listBudget = old }
}

// SetTenantStep changes how many tenants one script of the tenant list
// reads, so tests can reach the stepped busiest order with few tenants.
// It returns a function that restores the old value.
func SetTenantStep(n int) (restore func()) {
	old := tenantStep
	tenantStep = n
	return func() { tenantStep = old }
}

// TenantStep is how many tenants one script of the tenant list reads.
func TenantStep() int { return tenantStep }

// LibrarySource is the text of the function library (functions.go).
func LibrarySource() string {
	library.build()
	return library.src
}

// DisableLean turns b's lean path off (lean.go), so tests reach the full
// scripts with jobs that need none of the scheduler.
func DisableLean(b *Backend) { b.noLean = true }

// Listening reports whether b hears queue q's notifications itself.
func Listening(b *Backend, q string) bool { return b.notes.listening(b.keys.queue(q).channel) }

// Channel is the pub/sub channel of queue q.
func Channel(b *Backend, q string) string { return b.keys.queue(q).channel }

// LingeringCalls is how many calls wait in b's batcher for other traffic
// to go out with (Options.CompleteLinger).
func LingeringCalls(b *Backend) int {
	if b.batch == nil {
		return 0
	}
	b.batch.mu.Lock()
	defer b.batch.mu.Unlock()
	return len(b.batch.line) - b.batch.urgent
}

// HeadsKnown is the earliest timed work a lean lease of queue q would
// pass instead of reading the timed sets' heads ("" when it would read
// them; heads.go).
func HeadsKnown(b *Backend, q string) string {
	at, _ := b.headsKnown([]*qkeys{b.keys.queue(q)})
	return at
}

// Hears reports whether b hears queue q's channel and the timers channel.
func Hears(b *Backend, q string) bool {
	return b.notes.heard([]string{b.keys.queue(q).channel})
}

// SharedSource is the code every script that moves jobs runs before its
// own file (loadScript), with the Go constants filled in: a test script
// appended to it calls the scripts' own functions.
func SharedSource() string {
	var src strings.Builder
	for _, f := range libShared {
		src.WriteString(luaFile(f))
		src.WriteByte('\n')
	}
	return luaConstants.Replace(src.String())
}

// SchedKey is the hash of queue q's fair-order state (virtual time v,
// aging step ag, finish tags f:<tenant>).
func SchedKey(b *Backend, q string) string { return b.keys.queue(q).keys[keySched] }

// JobKey is the hash of the job with id id.
func JobKey(b *Backend, id string) (string, error) {
	seq, q, err := parseID(id)
	if err != nil {
		return "", err
	}
	return b.keys.queue(q).jobKey(seq), nil
}
