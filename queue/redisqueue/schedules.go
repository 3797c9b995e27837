package redisqueue

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// The schedule scripts touch only schedule keys, which share one hash tag,
// so schedules work on a Cluster client too.
var (
	scriptSchedulePut    = buildScript("schedule_put", "")
	scriptScheduleDelete = buildScript("schedule_delete", "")
	scriptSchedulePause  = buildScript("schedule_pause", "")
	scriptScheduleClaim  = buildScript("schedule_claim", "")
	scriptScheduleRecord = buildScript("schedule_record", "")
)

func init() {
	allScripts = append(allScripts, scriptSchedulePut, scriptScheduleDelete, scriptSchedulePause,
		scriptScheduleClaim, scriptScheduleRecord)
}

// schedNow is now in Unix nanoseconds, as the schedule scripts take it.
func (b *Backend) schedNow() string {
	if b.clk != nil {
		return strconv.FormatInt(b.clk.Now().UnixNano(), 10)
	}
	return strconv.FormatInt(time.Now().UnixNano(), 10)
}

// nsText is t in Unix nanoseconds as decimal text, "0" for the zero time.
func nsText(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

// nsTime reverses nsText, in UTC.
func nsTime(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// schedReply reads the {code, ...} reply of a schedule script.
func schedReply(name string, res any) error {
	arr, ok := res.([]any)
	if !ok || len(arr) == 0 {
		return errors.New("redisqueue: unexpected schedule script reply")
	}
	switch code, _ := arr[0].(string); code {
	case codeOK:
		return nil
	case codeNotFound:
		return queue.ErrScheduleNotFound
	case "owned":
		src := ""
		if len(arr) > 1 {
			src, _ = arr[1].(string)
		}
		return &queue.ScheduleOwnedError{Name: name, Source: src}
	}
	return errors.New("redisqueue: unexpected schedule script reply")
}

// PutSchedule implements backend.ScheduleStore.
func (b *Backend) PutSchedule(ctx context.Context, rec backend.ScheduleRecord, keep string) (*backend.ScheduleRecord, error) {
	if rec.Name == "" {
		return nil, queue.ErrScheduleNotFound
	}
	res, err := b.eval(ctx, "put schedule", scriptSchedulePut,
		[]string{b.keys.schedule(rec.Name), b.keys.scheduleNames()},
		rec.Name, string(rec.Def), rec.Timing, rec.Source, keep, b.schedNow())
	if err != nil {
		return nil, err
	}
	if err := schedReply(rec.Name, res); err != nil {
		return nil, err
	}
	return b.GetSchedule(ctx, rec.Name)
}

// GetSchedule implements backend.ScheduleStore.
func (b *Backend) GetSchedule(ctx context.Context, name string) (*backend.ScheduleRecord, error) {
	if name == "" {
		return nil, queue.ErrScheduleNotFound
	}
	m, err := b.client.HGetAll(ctx, b.keys.schedule(name)).Result()
	if err != nil {
		return nil, b.fault("get schedule", err)
	}
	if len(m) == 0 {
		return nil, queue.ErrScheduleNotFound
	}
	return scheduleOf(name, m), nil
}

// scheduleOf decodes a schedule's hash.
func scheduleOf(name string, m map[string]string) *backend.ScheduleRecord {
	return &backend.ScheduleRecord{
		Name: name, Def: []byte(m["df"]), Timing: m["tm"], Source: m["src"],
		Paused: m["pa"] == "1", LastTick: nsTime(m["lt"]), Pending: m["pd"] == "1",
		ClaimedAt: nsTime(m["cl"]), LastJobID: m["lj"], LastRunTick: nsTime(m["rt"]),
		LastRunAt: nsTime(m["ra"]), CreatedAt: nsTime(m["ca"]), UpdatedAt: nsTime(m["ua"]),
	}
}

// ListSchedules implements backend.ScheduleStore. A schedule deleted while
// it is read is left out.
func (b *Backend) ListSchedules(ctx context.Context) ([]*backend.ScheduleRecord, error) {
	names, err := b.client.SMembers(ctx, b.keys.scheduleNames()).Result()
	if err != nil {
		return nil, b.fault("list schedules", err)
	}
	sort.Strings(names)
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err = b.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HGetAll(ctx, b.keys.schedule(n))
		}
		return nil
	})
	if err != nil {
		return nil, b.fault("list schedules", err)
	}
	out := make([]*backend.ScheduleRecord, 0, len(names))
	for i, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			out = append(out, scheduleOf(names[i], m))
		}
	}
	return out, nil
}

// DeleteSchedule implements backend.ScheduleStore.
func (b *Backend) DeleteSchedule(ctx context.Context, name, source, keep string) error {
	if name == "" {
		return queue.ErrScheduleNotFound
	}
	res, err := b.eval(ctx, "delete schedule", scriptScheduleDelete,
		[]string{b.keys.schedule(name), b.keys.scheduleNames()}, name, source, keep)
	if err != nil {
		return err
	}
	return schedReply(name, res)
}

// PauseSchedule implements backend.ScheduleStore.
func (b *Backend) PauseSchedule(ctx context.Context, name string, paused bool) (*backend.ScheduleRecord, error) {
	if name == "" {
		return nil, queue.ErrScheduleNotFound
	}
	flag := "0"
	if paused {
		flag = "1"
	}
	res, err := b.eval(ctx, "pause schedule", scriptSchedulePause, []string{b.keys.schedule(name)}, flag, b.schedNow())
	if err != nil {
		return nil, err
	}
	if err := schedReply(name, res); err != nil {
		return nil, err
	}
	return b.GetSchedule(ctx, name)
}

// ClaimTick implements backend.ScheduleStore.
func (b *Backend) ClaimTick(ctx context.Context, name string, prev, tick time.Time, run bool) (bool, error) {
	if name == "" {
		return false, queue.ErrScheduleNotFound
	}
	flag := "0"
	if run {
		flag = "1"
	}
	res, err := b.eval(ctx, "claim tick", scriptScheduleClaim, []string{b.keys.schedule(name)},
		nsText(prev), nsText(tick), flag, b.schedNow())
	if err != nil {
		return false, err
	}
	n, _ := res.(int64)
	return n == 1, nil
}

// RecordRun implements backend.ScheduleStore.
func (b *Backend) RecordRun(ctx context.Context, name string, tick time.Time, jobID string) error {
	if name == "" {
		return queue.ErrScheduleNotFound
	}
	res, err := b.eval(ctx, "record run", scriptScheduleRecord, []string{b.keys.schedule(name)},
		nsText(tick), jobID, b.schedNow())
	if err != nil {
		return err
	}
	return schedReply(name, res)
}
