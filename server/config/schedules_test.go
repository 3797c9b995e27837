package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScheduleProblems(t *testing.T) {
	t.Parallel()
	head := "schedules:\n  - name: nightly\n"
	cases := []struct {
		name string
		doc  string
		line int
		path string
		msg  string
	}{
		{"bad cron", head + "    cron: \"61 * * * *\"\n    job: {queue: q, kind: k}\n", 3, "schedules[0].cron", "must be 5 fields"},
		{"no timing", head + "    job: {queue: q, kind: k}\n", 2, "schedules[0].cron", "is missing: set exactly one of cron and every"},
		{"both", head + "    cron: \"@daily\"\n    every: 1m\n    job: {queue: q, kind: k}\n", 3, "schedules[0].cron", "must not be set together with every: set exactly one of cron and every"},
		{"@every too short", head + "    cron: \"@every 1ms\"\n    job: {queue: q, kind: k}\n", 3, "schedules[0].cron", "must be between 1s and 100 years, got 1ms"},
		{"never runs", head + "    cron: \"0 0 30 2 *\"\n    job: {queue: q, kind: k}\n", 3, "schedules[0].cron", "never matches a date"},
		{"bad zone", head + "    cron: \"@daily\"\n    time_zone: Mars/Base\n    job: {queue: q, kind: k}\n", 4, "schedules[0].time_zone", "IANA"},
		{"bad overlap", head + "    every: 1m\n    overlap: sometimes\n    job: {queue: q, kind: k}\n", 4, "schedules[0].overlap", `must be "allow"`},
		{"no kind", head + "    every: 1m\n    job:\n      queue: q\n", 4, "schedules[0].job.kind", "must not be empty"},
		{"job field", head + "    every: 1m\n    job: {queue: q, kind: k, priority: -1}\n", 4, "schedules[0].job.priority", "between 0"},
		{"duplicate", head + "    every: 1m\n    job: {queue: q, kind: k}\n  - name: nightly\n    every: 2m\n    job: {queue: q, kind: k}\n", 5, "schedules[1].name", "duplicate"},
		{"unknown key", head + "    every: 1m\n    overlapp: skip\n    job: {queue: q, kind: k}\n", 4, "schedules[0].overlapp", "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "sluice.yaml")
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("Parse = %v, want problems", err)
			}
			got := e.Problems[0]
			if got.Line != tc.line || got.Path != tc.path || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("problem = %s; want line %d: %s: ...%s...", got, tc.line, tc.path, tc.msg)
			}
		})
	}
}

func TestScheduleToQueue(t *testing.T) {
	t.Parallel()
	doc := `schedules:
  - name: nightly-report
    cron: "30 2 * * *"
    time_zone: Europe/Berlin
    jitter: 30s
    overlap: skip
    job:
      queue: reports
      kind: report
      payload: {period: day, formats: [pdf]}
      timeout: 10m
`
	cfg, err := Parse([]byte(doc), "sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	qs := cfg.QueueSchedules()
	if len(qs) != 1 {
		t.Fatalf("QueueSchedules = %d, want 1", len(qs))
	}
	s := qs[0]
	if s.Cron != "30 2 * * *" || s.TimeZone != "Europe/Berlin" || s.Jitter != 30*time.Second || s.Overlap != "skip" ||
		s.Job.Timeout != 10*time.Minute || string(s.Job.Payload) != `{"formats":["pdf"],"period":"day"}` {
		t.Errorf("schedule = %+v payload %s", s, s.Job.Payload)
	}
}
