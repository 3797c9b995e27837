package redisqueue

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

var (
	_ backend.EventLog        = (*Backend)(nil)
	_ backend.ProgressBackend = (*Backend)(nil)
)

// DefaultEventsMaxLen is Options.EventsMaxLen's default.
const DefaultEventsMaxLen = 100000

// eventLog is the event log's setting: the stream's key ("<prefix>events",
// empty when off) and the arguments that end, before the outbox's, every
// script that moves jobs (see lua/events.lua).
type eventLog struct {
	key  string
	args []any
}

var logOff = []any{"no-log"}

func (l *eventLog) init(keys *keyring, opts Options) error {
	l.args = logOff
	if !opts.Events {
		return nil
	}
	if opts.EventsMaxLen < 0 {
		return backend.InvalidArgument(queue.Field("Options", "EventsMaxLen"), "must not be negative, got %d", opts.EventsMaxLen)
	}
	key, err := keys.prefix.Physical("events")
	if err != nil {
		return err
	}
	n := opts.EventsMaxLen
	if n == 0 {
		n = DefaultEventsMaxLen
	}
	l.key, l.args = key, []any{key, strconv.Itoa(n), "log"}
	return nil
}

// logArgs returns the event log's script arguments, clipped so that an
// append copies them.
func (b *Backend) logArgs() []any { return slices.Clip(b.events.args) }

// SetProgress implements backend.ProgressBackend in one fenced script.
func (b *Backend) SetProgress(ctx context.Context, id, token string, p queue.JobProgress) error {
	pg, err := json.Marshal(struct {
		Percent *float64        `json:"percent,omitempty"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{p.Percent, p.Data})
	if err != nil {
		return backend.InvalidArgument(queue.Field("JobProgress", "Data"), "must be a JSON object")
	}
	_, _, err = b.jobScript(ctx, "progress", scriptProgress, id, token, string(pg))
	return err
}

// setProgress decodes the job hash's progress fields: pg, the report as
// JSON, and pa, when it was recorded (µs).
func setProgress(j *queue.Job, f, v string) {
	if j.Progress == nil {
		j.Progress = &queue.JobProgress{}
	}
	if f == "pa" {
		j.Progress.UpdatedAt = micros(v)
		return
	}
	_ = json.Unmarshal([]byte(v), j.Progress) // written by SetProgress: valid
}

var streamID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// ReadEvents implements backend.EventLog. Event ids are the stream's entry
// ids; a blocked read is woken by Redis itself (XREAD BLOCK) when any
// process appends. Gap is found in the same atomic step as the read (see
// trimmedAfter).
func (b *Backend) ReadEvents(ctx context.Context, after string, max int, block time.Duration) (backend.EventBatch, error) {
	if after != "" && !streamID.MatchString(after) {
		return backend.EventBatch{}, backend.InvalidArgument(queue.Field("", "after"), "is not an event id of this backend: %q", after)
	}
	if b.events.key == "" {
		return backend.EventBatch{}, b.fault("read events", queue.ErrEventLogOff)
	}
	if b.closed.Load() {
		return backend.EventBatch{}, errClosed
	}
	if max <= 0 {
		max = queue.DefaultListLimit
	}
	if after == "" {
		// From the oldest retained: nothing before it can be missed.
		return b.xread(ctx, "0-0", max, block)
	}
	out, err := b.readChecked(ctx, after, max)
	if err != nil || len(out.Events) > 0 || block <= 0 {
		return out, err
	}
	// Nothing yet: wait for the next append. Entries that come while
	// blocked wake the read at once, so none can be trimmed unseen
	// between the check above and what this returns.
	next, err := b.xread(ctx, after, max, block)
	next.Gap = out.Gap
	return next, err
}

// xread reads up to max entries after the cursor, waiting up to block
// (none when block <= 0) for one.
func (b *Backend) xread(ctx context.Context, after string, max int, block time.Duration) (backend.EventBatch, error) {
	args := &redis.XReadArgs{Streams: []string{b.events.key, after}, Count: int64(max), Block: -1}
	if block > 0 {
		args.Block = max64(block, time.Millisecond)
	}
	res, err := b.client.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		return backend.EventBatch{}, nil
	}
	if err != nil {
		return backend.EventBatch{}, b.fault("read events", err)
	}
	return backend.EventBatch{Events: decodeStreams(res)}, nil
}

// readChecked reads without waiting, and whether entries after the
// cursor were trimmed, in one MULTI: the stream's info, its oldest entry
// and the read see the same stream.
func (b *Backend) readChecked(ctx context.Context, after string, max int) (backend.EventBatch, error) {
	var (
		info  *redis.XInfoStreamCmd
		first *redis.XMessageSliceCmd
		read  *redis.XStreamSliceCmd
	)
	_, err := b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		info = p.XInfoStream(ctx, b.events.key)
		first = p.XRangeN(ctx, b.events.key, "-", "+", 1)
		read = p.XRead(ctx, &redis.XReadArgs{Streams: []string{b.events.key, after}, Count: int64(max), Block: -1})
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !isNoSuchKey(err) {
		return backend.EventBatch{}, b.fault("read events", err)
	}
	res, err := read.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return backend.EventBatch{}, b.fault("read events", err)
	}
	out := backend.EventBatch{Events: decodeStreams(res)}
	si, err := info.Result()
	switch {
	case isNoSuchKey(err):
		return out, nil // no stream: nothing was ever logged, or it was deleted whole
	case err != nil:
		return backend.EventBatch{}, b.fault("read events", err)
	}
	var oldest string
	if f := first.Val(); len(f) > 0 {
		oldest = f[0].ID
	}
	out.Gap = trimmedAfter(after, si.MaxDeletedEntryID, oldest, si.LastGeneratedID)
	return out, nil
}

// trimmedAfter reports whether entries after the cursor were deleted
// before being read. Redis does not keep the ids that XTRIM (and the
// scripts' XADD MAXLEN) removed, so this is judged by the oldest entry
// kept: a cursor before it, with room for an entry between, is taken as
// a gap. That may be a false alarm when only the cursor's own entry was
// trimmed, never a miss. A stream emptied by trimming whose last id is
// past the cursor surely lost what came after it; and Redis 7 names the
// newest entry an XDEL removed (maxDeleted), a gap when past the cursor.
func trimmedAfter(after, maxDeleted, oldest, last string) bool {
	cur, ok := parseStreamID(after)
	if !ok {
		return false
	}
	if md, ok := parseStreamID(maxDeleted); ok && cur.less(md) {
		return true
	}
	if o, ok := parseStreamID(oldest); ok {
		return cur.less(o) && !cur.next().equal(o)
	}
	l, ok := parseStreamID(last)
	return ok && cur.less(l)
}

// sid is a stream entry id: milliseconds and a sequence number.
type sid struct{ ms, seq uint64 }

func parseStreamID(s string) (sid, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return sid{}, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return sid{ms, seq}, err1 == nil && err2 == nil
}

func (a sid) less(b sid) bool  { return a.ms < b.ms || (a.ms == b.ms && a.seq < b.seq) }
func (a sid) equal(b sid) bool { return a == b }

// next is the smallest id after a: an entry there follows the cursor
// with no room for another between.
func (a sid) next() sid {
	if a.seq == ^uint64(0) {
		return sid{a.ms + 1, 0}
	}
	return sid{a.ms, a.seq + 1}
}

// isNoSuchKey reports Redis's answer to XINFO STREAM on a missing key.
func isNoSuchKey(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "no such key")
}

// decodeStreams decodes the entries of an XREAD reply.
func decodeStreams(res []redis.XStream) []queue.Event {
	var out []queue.Event
	for _, s := range res {
		for _, m := range s.Messages {
			out = append(out, decodeLogged(m))
		}
	}
	return out
}

func max64(a, b time.Duration) time.Duration { return max(a, b) }

// decodeLogged turns a stream entry into an event; field names as in
// lua/events.lua.
func decodeLogged(m redis.XMessage) queue.Event {
	e := queue.Event{ID: m.ID}
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	e.Type, e.Time = queue.EventType(str("ty")), micros(str("ca"))
	e.JobID, e.Queue, e.Kind, e.Tenant, e.Group = str("j"), str("q"), str("k"), str("tn"), str("g")
	e.State, e.Attempt, e.Error = queue.State(str("st")), atoi(str("at")), str("er")
	if d := str("d"); d != "" {
		e.Data = json.RawMessage(d)
	}
	return e
}

// LastEventID implements backend.EventLog.
func (b *Backend) LastEventID(ctx context.Context) (string, error) {
	if b.events.key == "" {
		return "", b.fault("last event", queue.ErrEventLogOff)
	}
	res, err := b.client.XRevRangeN(ctx, b.events.key, "+", "-", 1).Result()
	if err != nil {
		return "", b.fault("last event", err)
	}
	if len(res) == 0 {
		return "", nil
	}
	return res[0].ID, nil
}

// PruneEvents implements backend.EventLog. Age is read from the entry ids,
// which Redis stamps with its own clock; limit is not used (XTRIM trims
// in one call).
func (b *Backend) PruneEvents(ctx context.Context, olderThan time.Duration, keep, limit int) (int, error) {
	if b.events.key == "" {
		return 0, b.fault("prune events", queue.ErrEventLogOff)
	}
	now := time.Now()
	if b.clk != nil {
		now = b.clk.Now()
	}
	cut := now.Add(-olderThan).UnixMilli()
	n, err := b.client.XTrimMinID(ctx, b.events.key, strconv.FormatInt(cut+1, 10)+"-0").Result()
	if err != nil {
		return 0, b.fault("prune events", err)
	}
	if keep > 0 {
		m, err := b.client.XTrimMaxLen(ctx, b.events.key, int64(keep)).Result()
		if err != nil {
			return int(n), b.fault("prune events", err)
		}
		n += m
	}
	return int(n), nil
}
