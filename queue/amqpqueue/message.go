package amqpqueue

import (
	"encoding/json"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/sluicehq/sluice/queue"
)

// A job travels as one message: the payload is the body, the job id the
// MessageId, the kind the Type, and the rest headers, so the broker's
// tools show jobs readably. The message is the job's only durable record:
// a retry or a snooze publishes a new message carrying the updated state
// (attempts spent, error history) before the old one is acknowledged.
const (
	hAttempt     = "sluice-attempt"      // attempts spent before this delivery
	hMaxAttempts = "sluice-max-attempts" // JobSpec.MaxAttempts
	hPriority    = "sluice-priority"     // JobSpec.Priority (AMQP's is coarser)
	hTenant      = "sluice-tenant"       // JobSpec.Tenant
	hTimeout     = "sluice-timeout"      // JobSpec.Timeout, nanoseconds
	hRunAt       = "sluice-run-at"       // RunAt, Unix nanoseconds
	hCreated     = "sluice-created"      // CreatedAt, Unix nanoseconds
	hStalls      = "sluice-stalls"       // redeliveries of earlier messages of this job
	hErrors      = "sluice-errors"       // JSON []queue.AttemptError
	hReason      = "sluice-reason"       // why a job was dead-lettered
	hFailedAt    = "sluice-failed-at"    // when, Unix nanoseconds
	hQueue       = "sluice-queue"        // lane queue, on dead letters
	hDeliveries  = "x-delivery-count"    // set by quorum queues on redelivery
)

// publishing encodes job j (its current attempt count, stalls and errors)
// as a persistent message.
func (b *Backend) publishing(j *queue.Job) amqp.Publishing {
	h := amqp.Table{
		hAttempt:     int64(j.Attempt),
		hMaxAttempts: int64(j.MaxAttempts),
		hCreated:     j.CreatedAt.UnixNano(),
	}
	if j.Priority != 0 {
		h[hPriority] = int64(j.Priority)
	}
	if j.Tenant != "" {
		h[hTenant] = j.Tenant
	}
	if j.Timeout != 0 {
		h[hTimeout] = int64(j.Timeout)
	}
	if !j.RunAt.IsZero() {
		h[hRunAt] = j.RunAt.UnixNano()
	}
	if j.Stalls != 0 {
		h[hStalls] = int64(j.Stalls)
	}
	if len(j.Errors) > 0 {
		buf, _ := json.Marshal(j.Errors) // plain structs: cannot fail
		h[hErrors] = string(buf)
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  "application/octet-stream",
		DeliveryMode: amqp.Persistent,
		Priority:     b.amqpPriority(j.Priority),
		MessageId:    j.ID,
		Timestamp:    j.CreatedAt,
		Type:         j.Kind,
		Body:         j.Payload,
	}
}

// amqpPriority maps a job priority (0 most urgent) onto AMQP's (higher
// first, 0..Priorities).
func (b *Backend) amqpPriority(p int) uint8 {
	n := b.opts.Priorities
	if n == 0 {
		return 0
	}
	return uint8(n - min(p, n))
}

// decode rebuilds the job a delivery carries, as it was when published.
// Stalls counts the redeliveries of earlier messages of the job plus this
// message's own (quorum queues count them in x-delivery-count).
func decode(d *amqp.Delivery, q string) (*queue.Job, error) {
	if d.MessageId == "" || d.Type == "" {
		return nil, fmt.Errorf("amqpqueue: message without MessageId or Type is not a job")
	}
	h := d.Headers
	j := &queue.Job{
		JobSpec: queue.JobSpec{
			Queue:       q,
			Kind:        d.Type,
			Payload:     d.Body,
			Tenant:      str(h[hTenant]),
			Priority:    int(num(h[hPriority])),
			MaxAttempts: int(num(h[hMaxAttempts])),
			Timeout:     time.Duration(num(h[hTimeout])),
		},
		ID:        d.MessageId,
		Attempt:   int(num(h[hAttempt])),
		Stalls:    int(num(h[hStalls]) + num(h[hDeliveries])),
		CreatedAt: unixTime(num(h[hCreated])),
	}
	if j.MaxAttempts <= 0 {
		j.MaxAttempts = queue.DefaultMaxAttempts
	}
	if ns := num(h[hRunAt]); ns != 0 {
		j.RunAt = unixTime(ns)
	}
	if s := str(h[hErrors]); s != "" {
		if err := json.Unmarshal([]byte(s), &j.Errors); err != nil {
			return nil, fmt.Errorf("amqpqueue: job %s: bad %s header: %w", j.ID, hErrors, err)
		}
		if n := len(j.Errors); n > 0 {
			j.LastError = j.Errors[n-1].Error
		}
	}
	return j, nil
}

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// num reads an integer header of any AMQP integer width.
func num(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case int16:
		return int64(n)
	case int8:
		return int64(n)
	case int:
		return int64(n)
	case uint8:
		return int64(n)
	case uint16:
		return int64(n)
	case uint32:
		return int64(n)
	}
	return 0
}

func str(v any) string {
	switch s := v.(type) {
	case string:
		return s
	case []byte:
		return string(s)
	}
	return ""
}
