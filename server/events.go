package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/server/config"
)

// sseKeepAlive is how often an idle event stream gets a comment line, so
// proxies and clients see it is alive.
const sseKeepAlive = 15 * time.Second

// eventFilter reads the filters of GET /v1/events: queue, tenant, group,
// job, kind (the job's kind) and type (event types, comma-separated or
// repeated); the resume point is the Last-Event-ID header, or the
// last_event_id parameter for clients that cannot set headers.
func eventFilter(r *http.Request) (queue.EventFilter, *problem) {
	q := r.URL.Query()
	f := queue.EventFilter{
		Queue: q.Get("queue"), Tenant: q.Get("tenant"), Group: q.Get("group"), JobID: q.Get("job"), Kind: q.Get("kind"),
		After: r.Header.Get("Last-Event-ID"),
	}
	if f.After == "" {
		f.After = q.Get("last_event_id")
	}
	for _, v := range q["type"] {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				f.Types = append(f.Types, queue.EventType(t))
			}
		}
	}
	if err := f.Validate(); err != nil {
		var ia *queue.InvalidArgumentError
		if errors.As(err, &ia) {
			name := map[string]string{"Queue": "queue", "Tenant": "tenant", "Group": "group", "JobID": "job", "Kind": "kind", "Types": "type"}[ia.Path.Name]
			if name == "type" { // the list helps only with a type
				return f, badRequest("%s %s (event types: %s)", name, ia.Rule, eventTypeList())
			}
			return f, badRequest("%s %s", name, ia.Rule)
		}
		return f, badRequest("%s", err.Error())
	}
	return f, nil
}

func eventTypeList() string {
	out := make([]string, len(queue.LogEventTypes))
	for i, t := range queue.LogEventTypes {
		out[i] = string(t)
	}
	return strings.Join(out, ", ")
}

// handleEvents streams job and group events as Server-Sent Events: each
// one as "id: <event id>", "event: <type>" and "data: <the event as
// JSON>". A client that reconnects with Last-Event-ID gets what it missed
// and the log still holds, then live events. A client that reads too
// slowly is sent an "error" event and cut off. Producers (and admins) may
// read every event, as they may read every job.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	f, p := eventFilter(r)
	if p != nil {
		writeProblem(w, p, nil)
		return
	}
	ctx := s.stopOnShutdown(r.Context())
	sub, err := s.jobs.Subscribe(ctx, f)
	if err != nil {
		if errors.Is(err, queue.ErrInvalidArgument) && f.After != "" {
			writeProblem(w, badRequest("Last-Event-ID must be the id of an event this server sent, got %q", clip(f.After)), nil)
			return
		}
		s.jobError(w, r, err)
		return
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	// How long a client may be away and still resume.
	h.Set("Sluice-Events-Retention", strconv.FormatInt(int64(s.eventRetention().Seconds()), 10))
	h.Set("Sluice-Events-Max", strconv.Itoa(s.maxEvents()))
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": sluice events\nretry: 2000\n\n")
	_ = rc.Flush()
	s.streamEvents(ctx, w, rc, sub)
}

// streamEvents writes sub's events until it ends or the client goes away.
func (s *Server) streamEvents(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, sub *queue.Subscription) {
	tick := time.NewTicker(sseKeepAlive)
	defer tick.Stop()
	gapSaid := false
	for {
		select {
		case e, ok := <-sub.Events():
			if !ok {
				s.endStream(w, rc, sub.Err())
				return
			}
			if sub.Gap() && !gapSaid {
				gapSaid = true
				fmt.Fprint(w, "event: gap\ndata: {\"detail\":\"events after Last-Event-ID were pruned before they were read\"}\n\n")
			}
			if err := writeEvent(w, e); err != nil {
				return
			}
			if len(sub.Events()) == 0 {
				if rc.Flush() != nil {
					return
				}
			}
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			if rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func writeEvent(w http.ResponseWriter, e queue.Event) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data)
	return err
}

// endStream tells the client why the stream ends when it is not the
// client's own leaving.
func (s *Server) endStream(w http.ResponseWriter, rc *http.ResponseController, err error) {
	switch {
	case errors.Is(err, queue.ErrSlowSubscriber):
		fmt.Fprint(w, "event: error\ndata: {\"detail\":\"too slow: events were not read fast enough; reconnect with Last-Event-ID\"}\n\n")
	case err != nil && !errors.Is(err, context.Canceled):
		s.log.Warn("server: event stream ended", "error", err)
		fmt.Fprint(w, "event: error\ndata: {\"detail\":\"event stream interrupted; reconnect with Last-Event-ID\"}\n\n")
	}
	_ = rc.Flush()
}

// eventsOn reports whether the job stores keep the event log.
func eventsOn(cfg *config.Config) bool { return !cfg.Queues.Events.Disabled }

// Event log defaults (config.Events).
const (
	defaultEventRetention = time.Hour
	defaultMaxEvents      = 100000
	pruneEventsEvery      = time.Minute
)

// startEventPruner prunes the event log to its retention and length once
// a minute, while the server runs.
func (s *Server) startEventPruner(ctx context.Context, wg *sync.WaitGroup) {
	log := s.backend.Features().Events
	if log == nil {
		return
	}
	keep, max := s.eventRetention(), s.maxEvents()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(pruneEventsEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := log.PruneEvents(ctx, keep, max, 0); err != nil && ctx.Err() == nil {
				s.log.Warn("server: pruning the event log", "error", err)
			}
		}
	}()
}

// eventRetention is queues.events.retention with its default.
func (s *Server) eventRetention() time.Duration {
	if d := s.Config().Queues.Events.Retention.D(); d > 0 {
		return d
	}
	return defaultEventRetention
}

// maxEvents is queues.events.max_events with its default.
func (s *Server) maxEvents() int {
	if n := s.Config().Queues.Events.MaxEvents; n > 0 {
		return n
	}
	return defaultMaxEvents
}
