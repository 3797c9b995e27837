package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// streamEvent is the subset of an event's JSON `sluice events` prints.
type streamEvent struct {
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    time.Time       `json:"created_at"`
	JobID   string          `json:"job_id"`
	Queue   string          `json:"queue"`
	Kind    string          `json:"kind"`
	Tenant  string          `json:"tenant"`
	Group   string          `json:"group"`
	State   string          `json:"state"`
	Attempt int             `json:"attempt"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
}

// eventLine is one event as a line: its time and type, then the fields
// that are set as key=value (a progress report as its percent and data),
// in a fixed order so lines can be compared and grepped.
func eventLine(data string) string {
	var e streamEvent
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		return data // not ours to judge: shown as it came
	}
	parts := []string{e.Time.UTC().Format(time.RFC3339Nano), e.Type}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+quoteIfNeeded(v))
		}
	}
	add("job", e.JobID)
	add("queue", e.Queue)
	add("kind", e.Kind)
	add("tenant", e.Tenant)
	add("group", e.Group)
	add("state", e.State)
	if e.Attempt > 0 {
		add("attempt", strconv.Itoa(e.Attempt))
	}
	add("error", e.Error)
	if len(e.Data) > 0 {
		if e.Type == "job.progress" {
			var p jobProgress
			if json.Unmarshal(e.Data, &p) == nil {
				add("progress", p.String())
			}
		} else {
			add("data", string(e.Data))
		}
	}
	add("id", e.ID)
	return strings.Join(parts, " ")
}

// quoteIfNeeded quotes v when it holds spaces, quotes or control
// characters, so a line splits back into its fields.
func quoteIfNeeded(v string) string {
	if strings.ContainsAny(v, " \t\n\r\"") {
		return fmt.Sprintf("%q", v)
	}
	return v
}
