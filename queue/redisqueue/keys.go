package redisqueue

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/keyspace"
	"github.com/sluicehq/sluice/queue"
)

// Per-queue keys, in the order every script receives them (KEYS[1..nk] for
// the first queue, KEYS[nk+1..2nk] for the second, ...). What each holds is
// written once, in the package doc's key list (doc.go), in this order. The
// index names match the states whose jobs they hold, so a script finds a
// job's index as q[state]. All of them carry the queue name as their hash
// tag.
var queueKeyNames = [...]string{
	"pending", "scheduled", "retrying", "active", "completed", "failed", "cancelled",
	"waiting", "jobs", "seq", "sched", "paused",
}

const nk = len(queueKeyNames)

// Positions in queueKeyNames of the keys Go code writes directly.
const (
	keySched  = 10
	keyPaused = 11
)

// qkeys is one queue's key set, built once and cached.
type qkeys struct {
	name string
	keys []string // nk keys in queueKeyNames order
	// jobPrefix is the job hash key without its sequence: the scripts
	// append a job's sequence to it (and ":errors" for its error history).
	jobPrefix string
	// channel is the pub/sub channel that says "jobs may be ready".
	channel string
	// idSuffix is what follows the sequence in a job id: "-" and the
	// queue name in id form (see idQueue).
	idSuffix string
	// fullUntil is when this queue's leases try the lean path again, in
	// Unix nanoseconds (lean.go).
	fullUntil atomic.Int64
}

// keyring builds and caches key sets per queue.
type keyring struct {
	prefix   keyspace.Prefix
	registry string // the set of queue names, for calls on all queues
	// outbox is the prefix of the event outbox's keys, "<prefix>outbox:":
	// outboxKey appends the rest of a key whose name a call knows, the
	// scripts those they find while they run (see lua/events.lua).
	outbox string
	// schedPrefix is the prefix of the scheduler's keys, "<prefix>sched:".
	schedPrefix string
	cache       sync.Map
}

// sched returns the physical key "<prefix>sched:<parts...>" of the tenant
// and group scheduler. lua/sched.lua derives the same keys from job
// fields: a tenant's is sched:t:<tenant>, a group's sched:g:<group>.
func (r *keyring) sched(parts ...string) string {
	logical, err := keyspace.Join("sched", parts...)
	if err != nil {
		panic("redisqueue: " + err.Error()) // callers pass validated names
	}
	phys, err := r.prefix.Physical(logical)
	if err != nil {
		panic("redisqueue: " + err.Error())
	}
	return phys
}

// tenant and group return the keys of a tenant's and a group's hashes,
// sched:t:<tenant> and sched:g:<group>: what sched("t", name) builds,
// concatenated, since an enqueue builds them for every spec with a tenant
// or group.
func (r *keyring) tenant(name string) string { return r.schedPrefix + "t:" + keyspace.Escape(name) }
func (r *keyring) group(id string) string    { return r.schedPrefix + "g:" + keyspace.Escape(id) }
func (r *keyring) defaults() string          { return r.sched("defaults") }

// outboxKey returns the physical key "<prefix>outbox:<kind>:<name>" of the
// event outbox: kind is a constant ("event", "log:event", "log:job",
// "log:sub") and name a caller's id or subscription, escaped here. The
// scripts that find such a name only while they run escape it the same
// way (lib.lua's esc).
func (r *keyring) outboxKey(kind, name string) string {
	return r.outbox + kind + ":" + keyspace.Escape(name)
}

func newKeyring(p keyspace.Prefix) (*keyring, error) {
	reg, err := p.Physical("queues")
	if err != nil {
		return nil, err
	}
	ob, err := p.Physical("outbox:")
	if err != nil {
		return nil, err
	}
	sp, err := p.Physical("sched:")
	if err != nil {
		return nil, err
	}
	return &keyring{prefix: p, registry: reg, outbox: ob, schedPrefix: sp}, nil
}

// key returns the physical key "<prefix>queue:{<queue>}:<parts...>".
func (r *keyring) key(q string, parts ...string) string {
	logical, err := keyspace.JoinTagged("queue", 0, 1, append([]string{q}, parts...)...)
	if err != nil {
		// Queue names are validated (non-empty) before any key is built and
		// every part is a non-empty constant, so this cannot happen.
		panic("redisqueue: " + err.Error())
	}
	phys, err := r.prefix.Physical(logical)
	if err != nil {
		panic("redisqueue: " + err.Error())
	}
	return phys
}

// queue returns the key set of queue q.
func (r *keyring) queue(q string) *qkeys {
	if v, ok := r.cache.Load(q); ok {
		return v.(*qkeys)
	}
	k := &qkeys{
		name:      q,
		keys:      make([]string, nk),
		jobPrefix: r.key(q, "job") + ":",
		channel:   r.key(q, "ready"),
		idSuffix:  "-" + idQueue(q),
	}
	for i, n := range queueKeyNames {
		k.keys[i] = r.key(q, n)
	}
	v, _ := r.cache.LoadOrStore(q, k)
	return v.(*qkeys)
}

// uniqueKey is the string key that holds a unique key for its job.
func (r *keyring) uniqueKey(q, unique string) string { return r.key(q, "unique", unique) }

// jobKey and errorsKey name one job's hash and its error history list.
func (k *qkeys) jobKey(seq string) string    { return k.jobPrefix + seq }
func (k *qkeys) errorsKey(seq string) string { return k.jobPrefix + seq + ":errors" }

// id returns the id of the job with sequence seq in this queue.
func (k *qkeys) id(seq string) string { return seq + k.idSuffix }

// seqLen is the width of a sequence: microseconds since 1970 fit in 16
// digits until the year 2286, and stay exact in Lua's doubles (below 2^53)
// until 2255.
const seqLen = 16

// idEscape is the escape byte of a queue name in a job id. Ids go into
// URL paths (/v1/jobs/{id}), so they use only the characters RFC 3986
// leaves unreserved: A-Z a-z 0-9 - . _ ~. keyspace.Escape's '%' is not one
// of them, so an id writes the same escapes with '~' instead, and '~'
// itself as "~7E".
const idEscape = '~'

// idQueue returns queue name q in id form: keyspace.Escape(q) with every
// '~' written "~7E" and then every '%' written '~'. A name of letters,
// digits, '-', '.' and '_' is its own id form ("mail"); "c:d" is "c~3Ad".
// lua/events.lua's id_part does the same from the escaped name.
func idQueue(q string) string {
	e := keyspace.Escape(q)
	if !strings.ContainsAny(e, "%~") {
		return e
	}
	return strings.ReplaceAll(strings.ReplaceAll(e, "~", "~7E"), "%", "~")
}

// queueOfID reverses idQueue. It accepts only what idQueue produces, so a
// queue has exactly one id form. An id made before ids were URL-safe
// carries keyspace.Escape's form ('%'): it is read as such.
func queueOfID(s string) (string, error) {
	if strings.IndexByte(s, '%') >= 0 {
		return keyspace.Unescape(s)
	}
	if strings.IndexByte(s, idEscape) < 0 {
		return keyspace.Unescape(s) // no escapes: checks every byte is unreserved
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != idEscape {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", queue.ErrNotFound
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil || strings.ToUpper(s[i+1:i+3]) != s[i+1:i+3] {
			return "", queue.ErrNotFound
		}
		b.WriteByte(byte(v))
		i += 2
	}
	q := b.String()
	if idQueue(q) != s {
		return "", queue.ErrNotFound // not the one id form of q
	}
	return q, nil
}

// parseID splits a job id into its sequence and queue. A malformed id
// names no job.
func parseID(id string) (seq, q string, err error) {
	if len(id) < seqLen+2 || id[seqLen] != '-' {
		return "", "", queue.ErrNotFound
	}
	seq = id[:seqLen]
	for i := 0; i < seqLen; i++ {
		if seq[i] < '0' || seq[i] > '9' {
			return "", "", queue.ErrNotFound
		}
	}
	q, err = queueOfID(id[seqLen+1:])
	if err != nil || q == "" {
		return "", "", queue.ErrNotFound
	}
	return seq, q, nil
}

// scheduleTag is the hash tag of every schedule key, so that a schedule's
// hash and the set of names share one Cluster slot.
const scheduleTag = "s"

// schedule returns the physical key "<prefix>schedules:{s}:<name>" of one
// schedule's hash (see lua/schedule_put.lua for its fields).
func (r *keyring) schedule(name string) string {
	return r.physical(keyspace.JoinTagged("schedules", 0, 1, scheduleTag, name))
}

// scheduleNames returns the physical key "<prefix>schedules:{s}" of the
// set of schedule names.
func (r *keyring) scheduleNames() string {
	return r.physical(keyspace.JoinTagged("schedules", 0, 1, scheduleTag))
}

// physical prefixes a logical key built from validated parts.
func (r *keyring) physical(logical string, err error) string {
	if err != nil {
		panic("redisqueue: " + err.Error())
	}
	phys, err := r.prefix.Physical(logical)
	if err != nil {
		panic("redisqueue: " + err.Error())
	}
	return phys
}
