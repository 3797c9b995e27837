package queue

import (
	"strings"
	"testing"
	"time"
)

func mustTicker(t *testing.T, s Schedule) *ticker {
	t.Helper()
	k, err := compileSchedule(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTicksAcrossDaylightSaving: a 02:30 tick runs once on the day the
// clocks skip 02:00-03:00 (at 03:30, after the gap) and once on the day
// 01:00-02:00 happens twice (a 01:30 tick at its first occurrence).
func TestTicksAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	cases := []struct {
		name, cron string
		from       time.Time
		want       []time.Time
	}{
		{"spring forward, 02:30 in the gap", "30 2 * * *", time.Date(2030, 3, 9, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2030, 3, 10, 7, 30, 0, 0, time.UTC), // 03:30 EDT: the gap's 02:30, once
			time.Date(2030, 3, 11, 6, 30, 0, 0, time.UTC), // 02:30 EDT
		}},
		{"fall back, 01:30 twice on the wall", "30 1 * * *", time.Date(2030, 11, 2, 12, 0, 0, 0, ny), []time.Time{
			time.Date(2030, 11, 3, 5, 30, 0, 0, time.UTC), // 01:30 EDT, the first; not 01:30 EST
			time.Date(2030, 11, 4, 6, 30, 0, 0, time.UTC), // 01:30 EST
		}},
		{"hourly over the gap", "0 * * * *", time.Date(2030, 3, 10, 0, 30, 0, 0, ny), []time.Time{
			time.Date(2030, 3, 10, 6, 0, 0, 0, time.UTC), // 01:00 EST
			time.Date(2030, 3, 10, 7, 0, 0, 0, time.UTC), // 03:00 EDT (02:00 is in the gap), once
			time.Date(2030, 3, 10, 8, 0, 0, 0, time.UTC), // 04:00 EDT
		}},
		{"hourly over the repeated hour", "0 * * * *", time.Date(2030, 11, 3, 0, 30, 0, 0, ny), []time.Time{
			time.Date(2030, 11, 3, 5, 0, 0, 0, time.UTC), // 01:00 EDT
			time.Date(2030, 11, 3, 7, 0, 0, 0, time.UTC), // 02:00 EST; 01:00 EST is the same wall time
		}},
		{"UTC weekdays", "0 9 * * 1-5", time.Date(2030, 1, 4, 10, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2030, 1, 7, 9, 0, 0, 0, time.UTC),
			time.Date(2030, 1, 8, 9, 0, 0, 0, time.UTC),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tz := "America/New_York"
			if tc.name == "UTC weekdays" {
				tz = ""
			}
			k := mustTicker(t, Schedule{Cron: tc.cron, TimeZone: tz})
			got := k.upcoming(tc.from, len(tc.want))
			for i := range tc.want {
				if i >= len(got) || !got[i].Equal(tc.want[i]) {
					t.Fatalf("ticks = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestDueTicks(t *testing.T) {
	t.Parallel()
	base := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		s    Schedule
		now  time.Time
		max  int
		want int
		last time.Time
	}{
		{"interval, none due", Schedule{Every: time.Minute}, base.Add(59 * time.Second), 10, 0, time.Time{}},
		{"interval, latest of many", Schedule{Every: time.Minute}, base.Add(10*time.Minute + time.Second), 1, 1, base.Add(10 * time.Minute)},
		{"interval, bounded catch-up", Schedule{Every: time.Minute}, base.Add(10 * time.Minute), 3, 3, base.Add(10 * time.Minute)},
		{"@every descriptor", Schedule{Cron: "@every 30s"}, base.Add(time.Minute), 5, 2, base.Add(time.Minute)},
		{"cron after a year down", Schedule{Cron: "* * * * *"}, base.Add(366 * 24 * time.Hour), 2, 2, base.Add(366 * 24 * time.Hour)},
		{"@hourly", Schedule{Cron: "@hourly"}, base.Add(3*time.Hour + time.Minute), 10, 3, base.Add(3 * time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := mustTicker(t, tc.s).due(base, tc.now, tc.max)
			if len(got) != tc.want {
				t.Fatalf("due = %v, want %d ticks", got, tc.want)
			}
			if tc.want > 0 && !got[len(got)-1].Equal(tc.last) {
				t.Errorf("latest due = %v, want %v", got[len(got)-1], tc.last)
			}
		})
	}
}

func TestScheduleValidate(t *testing.T) {
	t.Parallel()
	job := JobSpec{Queue: "q", Kind: "k"}
	cases := []struct {
		name  string
		s     Schedule
		field string
	}{
		{"ok cron", Schedule{Name: "n", Cron: "*/5 * * * *", Job: job}, ""},
		{"ok every", Schedule{Name: "n", Every: time.Hour, Job: job, Overlap: OverlapSkip, Missed: MissedCatchUp}, ""},
		{"no timing", Schedule{Name: "n", Job: job}, "Schedule.Cron"},
		{"both", Schedule{Name: "n", Cron: "@hourly", Every: time.Hour, Job: job}, "Schedule.Cron"},
		{"six fields", Schedule{Name: "n", Cron: "0 */5 * * * *", Job: job}, "Schedule.Cron"},
		{"tz in cron", Schedule{Name: "n", Cron: "CRON_TZ=UTC 0 * * * *", Job: job}, "Schedule.Cron"},
		{"short interval", Schedule{Name: "n", Every: time.Millisecond, Job: job}, "Schedule.Every"},
		{"@every below the minimum", Schedule{Name: "n", Cron: "@every 1ms", Job: job}, "Schedule.Cron"},
		{"@every zero", Schedule{Name: "n", Cron: "@every 0s", Job: job}, "Schedule.Cron"},
		{"@every negative", Schedule{Name: "n", Cron: "@every -1s", Job: job}, "Schedule.Cron"},
		{"@every not a duration", Schedule{Name: "n", Cron: "@every soon", Job: job}, "Schedule.Cron"},
		{"@every fractional", Schedule{Name: "n", Cron: "@every 1.5s", Job: job}, ""},
		{"never matches", Schedule{Name: "n", Cron: "0 0 30 2 *", Job: job}, "Schedule.Cron"},
		{"leap day", Schedule{Name: "n", Cron: "0 0 29 2 *", Job: job}, ""},
		{"bad zone", Schedule{Name: "n", Cron: "@daily", TimeZone: "Mars/Olympus", Job: job}, "Schedule.TimeZone"},
		{"bad overlap", Schedule{Name: "n", Cron: "@daily", Overlap: "queue", Job: job}, "Schedule.Overlap"},
		{"bad missed", Schedule{Name: "n", Cron: "@daily", Missed: "all", Job: job}, "Schedule.Missed"},
		{"catch-up bound", Schedule{Name: "n", Cron: "@daily", CatchUp: MaxCatchUp + 1, Job: job}, "Schedule.CatchUp"},
		{"negative jitter", Schedule{Name: "n", Cron: "@daily", Jitter: -time.Second, Job: job}, "Schedule.Jitter"},
		{"unique key", Schedule{Name: "n", Cron: "@daily", Job: JobSpec{Queue: "q", Kind: "k", UniqueKey: "u"}}, "Schedule.Job.UniqueKey"},
		{"job without kind", Schedule{Name: "n", Cron: "@daily", Job: JobSpec{Queue: "q"}}, "Schedule.Job.Kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate(0)
			got := ""
			if ia, ok := err.(*InvalidArgumentError); ok {
				got = ia.Field
			} else if err != nil {
				t.Fatalf("Validate = %v, want an *InvalidArgumentError", err)
			}
			if got != tc.field {
				t.Errorf("Validate names %q (%v), want %q", got, err, tc.field)
			}
		})
	}
}

// "@every D" ticks exactly as Every: D does, fractions of a second
// included.
func TestScheduleEveryDescriptorMatchesEvery(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, d := range []string{"1.5s", "2500ms", "1m30s"} {
		dur, _ := time.ParseDuration(d)
		byCron, err := compileSchedule(Schedule{Cron: "@every " + d})
		if err != nil {
			t.Fatalf("@every %s: %v", d, err)
		}
		byEvery, err := compileSchedule(Schedule{Every: dur})
		if err != nil {
			t.Fatal(err)
		}
		got, want := byCron.upcoming(base, 4), byEvery.upcoming(base, 4)
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Errorf("@every %s tick %d = %v, want %v", d, i, got[i], want[i])
			}
		}
		if n := len(byCron.due(base, base.Add(3*time.Second), 100)); d == "1.5s" && n != 2 {
			t.Errorf("@every 1.5s over 3s: %d ticks, want 2", n)
		}
	}
}

// The refusals say why, naming both fields when both are set.
func TestScheduleValidateMessages(t *testing.T) {
	t.Parallel()
	job := JobSpec{Queue: "q", Kind: "k"}
	cases := []struct {
		s    Schedule
		want string
	}{
		{Schedule{Name: "n", Cron: "@hourly", Every: time.Hour, Job: job}, "set exactly one of Cron and Every"},
		{Schedule{Name: "n", Job: job}, "set exactly one of Cron and Every"},
		{Schedule{Name: "n", Cron: "@every 1ms", Job: job}, "must be between 1s and 100 years, got 1ms"},
		{Schedule{Name: "n", Cron: "0 0 30 2 *", Job: job}, "never"},
	}
	for _, tc := range cases {
		err := tc.s.Validate(0)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%q, %v) = %v, want it to say %q", tc.s.Cron, tc.s.Every, err, tc.want)
		}
	}
}
