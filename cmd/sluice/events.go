package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Reconnection pacing of `sluice events`.
const (
	// eventsRetry is the wait before reconnecting when the server named
	// none (its "retry:" field).
	eventsRetry = 2 * time.Second
	// eventsIdle is how long a stream may stay silent before it is taken
	// for dead and reopened: the server sends a keep-alive every 15 s.
	eventsIdle = 45 * time.Second
)

// eventsFlags are the options of `sluice events`.
type eventsFlags struct {
	queue, tenant, group, job, kind string
	types                           []string
	after                           string
	max                             int
}

func newEventsCmd(cf *clientFlags) *cobra.Command {
	var f eventsFlags
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Follow the server's live job and group events (GET /v1/events)",
		Long: "Prints one line per event as it happens (--json: the event's JSON, one per line) until\n" +
			"interrupted or --max events. A dropped connection is reopened with the id of the last\n" +
			"event read (Last-Event-ID), so nothing the server still keeps is missed; a warning says\n" +
			"when events were pruned before they could be read.",
		Example: "  sluice events --queue crawl --tenant acme\n  sluice events --job 42 --type job.progress,job.completed --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.max < 0 {
				return fmt.Errorf("--max must not be negative, got %d", f.max)
			}
			return followEvents(cmd.Context(), cf, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "only events of this queue's jobs")
	fl.StringVar(&f.tenant, "tenant", "", "only events of this tenant's jobs and groups")
	fl.StringVar(&f.group, "group", "", "only events of this group and its jobs")
	fl.StringVar(&f.job, "job", "", "only events of this job")
	fl.StringVar(&f.kind, "kind", "", "only events of jobs of this kind")
	fl.StringSliceVar(&f.types, "type", nil, "only these event types (comma-separated or repeated): job.enqueued, job.started, job.progress, job.completed, job.failed, job.cancelled, group.completed")
	fl.StringVar(&f.after, "last-event-id", "", "resume after this event id: what the server still keeps since comes first")
	fl.IntVar(&f.max, "max", 0, "exit after this many events (0: follow until interrupted)")
	return cmd
}

// query is the filters as GET /v1/events's parameters.
func (f eventsFlags) query() string {
	v := url.Values{}
	for k, s := range map[string]string{"queue": f.queue, "tenant": f.tenant, "group": f.group, "job": f.job, "kind": f.kind} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if len(f.types) > 0 {
		v.Set("type", strings.Join(f.types, ","))
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// eventStream is one follower: where it is in the stream, and where it
// prints.
type eventStream struct {
	c        *client
	path     string
	last     string
	retry    time.Duration
	left     int // events still to print; -1 for no bound
	json     bool
	out, log io.Writer
}

// errEnough ends a stream that printed the events asked for.
var errEnough = errors.New("enough events")

// followEvents prints events until ctx ends or f.max were printed; a
// dropped stream is reopened after the server's retry delay, from the
// last event read. A refusal (bad filter, token, a server without an
// event log) ends it with the server's message.
func followEvents(ctx context.Context, cf *clientFlags, f eventsFlags, out, log io.Writer) error {
	c := cf.client()
	c.http = &http.Client{} // a stream has no overall deadline; eventsIdle guards it
	s := &eventStream{c: c, path: "/v1/events" + f.query(), last: f.after, retry: eventsRetry, left: -1, json: cf.json, out: out, log: log}
	if f.max > 0 {
		s.left = f.max
	}
	for {
		err := s.once(ctx)
		var ae *apiError
		switch {
		case errors.Is(err, errEnough):
			return nil
		case ctx.Err() != nil:
			return nil // interrupted: not a failure
		case errors.As(err, &ae) && (ae.Status < 500 || ae.Status == http.StatusNotImplemented):
			return err // refused, or no event log: trying again changes nothing
		case err != nil:
			fmt.Fprintf(log, "sluice: event stream: %v; reconnecting in %v\n", err, s.retry)
		default:
			fmt.Fprintf(log, "sluice: event stream ended; reconnecting in %v\n", s.retry)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.retry):
		}
	}
}

// once opens the stream and reads it until it ends.
func (s *eventStream) once(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", s.c.base+s.path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.token)
	}
	if s.last != "" {
		req.Header.Set("Last-Event-ID", s.last)
	}
	resp, err := s.c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the server at %s: %w", s.c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := &apiError{Status: resp.StatusCode, Body: raw}
		var p struct{ Detail string }
		if json.Unmarshal(raw, &p) == nil {
			e.Detail = p.Detail
		}
		return e
	}
	idle := time.AfterFunc(eventsIdle, cancel)
	defer idle.Stop()
	return readSSE(resp.Body, func() { idle.Reset(eventsIdle) }, s.handle)
}

// sseRecord is one record of an event stream.
type sseRecord struct {
	id, event, data string
	retry           int
}

// readSSE reads records from r, calling alive on every line and emit on
// every record; it stops at the first error emit returns.
func readSSE(r io.Reader, alive func(), emit func(sseRecord) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var rec sseRecord
	var data []string
	for sc.Scan() {
		alive()
		line := sc.Text()
		if line == "" {
			rec.data = strings.Join(data, "\n")
			if err := emit(rec); err != nil {
				return err
			}
			rec, data = sseRecord{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, val, _ := strings.Cut(line, ":")
		val = strings.TrimPrefix(val, " ")
		switch field {
		case "id":
			rec.id = val
		case "event":
			rec.event = val
		case "data":
			data = append(data, val)
		case "retry":
			if n, err := strconv.Atoi(val); err == nil && n >= 0 {
				rec.retry = n
			}
		}
	}
	return sc.Err()
}

// handle prints one record, and keeps its id to resume from.
func (s *eventStream) handle(r sseRecord) error {
	if r.retry > 0 {
		s.retry = time.Duration(r.retry) * time.Millisecond
	}
	switch r.event {
	case "gap":
		fmt.Fprintln(s.log, "sluice: some events were pruned before they could be read: the stream goes on with the oldest kept")
		return nil
	case "error":
		var p struct{ Detail string }
		_ = json.Unmarshal([]byte(r.data), &p)
		return fmt.Errorf("the server ended the stream: %s", p.Detail)
	}
	if r.data == "" {
		return nil
	}
	if r.id != "" {
		s.last = r.id
	}
	if s.json {
		fmt.Fprintln(s.out, r.data)
	} else {
		fmt.Fprintln(s.out, eventLine(r.data))
	}
	if s.left > 0 {
		s.left--
		if s.left == 0 {
			return errEnough
		}
	}
	return nil
}
