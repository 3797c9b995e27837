package redisqueue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/backend"
)

// errReply is a script reply of an unexpected shape.
type errReply struct{ what string }

func (e errReply) Error() string { return "unexpected script reply: " + e.what }

func asList(v any, what string) ([]any, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, errReply{fmt.Sprintf("%s is %T, want an array", what, v)}
	}
	return l, nil
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// micros turns a stored microsecond time into a time.Time (zero for 0).
func micros(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// decodeJob builds a job of queue k with sequence seq from a script's
// {fields, errors} pair. A job that no longer exists decodes to nil.
func decodeJob(k *qkeys, seq string, v any) (*queue.Job, error) {
	pair, err := asList(v, "job")
	if err != nil || len(pair) != 2 {
		return nil, errReply{"job is not a {fields, errors} pair"}
	}
	fields, err := asList(pair[0], "job fields")
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 {
		return nil, nil
	}
	j := &queue.Job{ID: k.id(seq)}
	j.Queue = k.name
	for i := 0; i+1 < len(fields); i += 2 {
		setField(j, asString(fields[i]), asString(fields[i+1]))
	}
	hist, err := asList(pair[1], "job errors")
	if err != nil {
		return nil, err
	}
	for _, h := range hist {
		j.Errors = append(j.Errors, decodeAttemptError(asString(h)))
	}
	return j, nil
}

// setField sets one stored field (see lua/lib.lua for the names).
func setField(j *queue.Job, f, v string) {
	switch f {
	case "k":
		j.Kind = v
	case "p":
		j.Payload = []byte(v)
	case "tn":
		j.Tenant = v
	case "g":
		j.Group = v
	case "pr":
		j.Priority = atoi(v)
	case "ra":
		j.RunAt = micros(v)
	case "ma":
		j.MaxAttempts = atoi(v)
	case "to":
		n, _ := strconv.ParseInt(v, 10, 64)
		j.Timeout = time.Duration(n)
	case "uk":
		j.UniqueKey = v
	case "uf":
		n, _ := strconv.ParseInt(v, 10, 64)
		j.UniqueFor = time.Duration(n) * time.Microsecond
	case "st":
		j.State = queue.State(v)
	case "at":
		j.Attempt = atoi(v)
	case "sl":
		j.Stalls = atoi(v)
	case "le":
		j.LastError = v
	case "rs":
		j.Result = []byte(v)
	case "cr":
		j.CancelRequested = v == "1"
	case "lu":
		j.LeaseUntil = micros(v)
	case "wk":
		j.WorkerID = v
	case "ca":
		j.CreatedAt = micros(v)
	case "ua":
		j.UpdatedAt = micros(v)
	case "sa":
		j.StartedAt = micros(v)
	case "fl":
		j.Flow = v
	case "fn":
		j.FlowNode = v
	case "dp":
		j.DependsOn = strings.Split(v, ",")
	case "opf":
		j.OnParentFailure = queue.ParentFailure(v)
	case "fa":
		j.FinishedAt = micros(v)
	case "wh":
		j.Webhook, _ = backend.DecodeWebhook(v) // written by EncodeWebhook: always decodes
	case "tc":
		j.Trace = v
	case "pg", "pa":
		setProgress(j, f, v) // eventlog.go
	}
}

// decodeAttemptError reads "<attempt>|<at µs>|<message>".
func decodeAttemptError(s string) queue.AttemptError {
	parts := strings.SplitN(s, "|", 3)
	if len(parts) != 3 {
		return queue.AttemptError{Error: s}
	}
	return queue.AttemptError{Attempt: atoi(parts[0]), At: micros(parts[1]), Error: parts[2]}
}

// fenceError maps a fenced script's error code to the queue's sentinel;
// an unknown code is a store fault of operation op.
func fenceError(op, code string) error {
	switch code {
	case codeNotFound:
		return queue.ErrNotFound
	case codeLeaseLost:
		return queue.ErrLeaseLost
	}
	return fmt.Errorf("redisqueue: %s: %w", op, errReply{"status " + strconv.Quote(code)})
}
