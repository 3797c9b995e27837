package config

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/sluicehq/sluice/queue"
)

// Schedule is one recurring job in the top-level schedules: list. The
// file's schedules are written to the job store at start and at each
// reload (added, changed, removed); a schedule of the same name set
// through the API is replaced, and the API refuses to change or delete a
// schedule the file defines (409): the file wins. Pausing, resuming and
// triggering through the API work on every schedule.
type Schedule struct {
	// Name identifies the schedule. Required.
	Name string `yaml:"name"`
	// Cron is a 5-field cron expression or a descriptor (@hourly,
	// @daily, "@every 30s"); exactly one of cron and every is set.
	Cron string `yaml:"cron"`
	// Every is a fixed interval, such as 15m.
	Every Duration `yaml:"every"`
	// TimeZone is the IANA zone the cron fields are read in; default UTC.
	TimeZone string `yaml:"time_zone"`
	// Job is the job each tick enqueues.
	Job ScheduleJob `yaml:"job"`
	// Jitter delays each run by up to this much; default 0.
	Jitter Duration `yaml:"jitter"`
	// Overlap is allow (default), skip or wait.
	Overlap string `yaml:"overlap"`
	// Missed is once (default), catchup or skip.
	Missed string `yaml:"missed"`
	// CatchUp bounds the ticks missed: catchup runs; default 10.
	CatchUp int `yaml:"catch_up"`
	// Grace is how late a tick may run under missed: skip; default 1m.
	Grace Duration `yaml:"grace"`
}

// ScheduleJob is the job of a schedule.
type ScheduleJob struct {
	Queue string `yaml:"queue"`
	Kind  string `yaml:"kind"`
	// Payload is any YAML value, handed to the worker as JSON.
	Payload     any      `yaml:"payload"`
	Tenant      string   `yaml:"tenant"`
	Group       string   `yaml:"group"`
	Priority    int      `yaml:"priority"`
	MaxAttempts int      `yaml:"max_attempts"`
	Timeout     Duration `yaml:"timeout"`
}

// Queue returns the schedule as the queue package takes it.
func (s Schedule) Queue() (queue.Schedule, error) {
	q := queue.Schedule{
		Name: s.Name, Cron: s.Cron, Every: s.Every.D(), TimeZone: s.TimeZone,
		Jitter: s.Jitter.D(), Overlap: queue.OverlapPolicy(s.Overlap), Missed: queue.MissedPolicy(s.Missed),
		CatchUp: s.CatchUp, Grace: s.Grace.D(),
		Job: queue.JobSpec{
			Queue: s.Job.Queue, Kind: s.Job.Kind, Tenant: s.Job.Tenant, Group: s.Job.Group,
			Priority: s.Job.Priority, MaxAttempts: s.Job.MaxAttempts, Timeout: s.Job.Timeout.D(),
		},
	}
	if s.Job.Payload != nil {
		b, err := json.Marshal(s.Job.Payload)
		if err != nil {
			return q, errors.New("job.payload cannot be written as JSON: " + err.Error())
		}
		q.Job.Payload = b
	}
	return q, nil
}

// QueueSchedules returns every schedule of the file as the queue package
// takes it; the config is valid, so none fails.
func (c *Config) QueueSchedules() []queue.Schedule {
	out := make([]queue.Schedule, 0, len(c.Schedules))
	for _, s := range c.Schedules {
		if q, err := s.Queue(); err == nil {
			out = append(out, q)
		}
	}
	return out
}

// scheduleKeys maps the queue package's field names to the file's.
var scheduleKeys = map[string]string{
	"Name": "name", "Cron": "cron", "Every": "every", "TimeZone": "time_zone", "Jitter": "jitter",
	"Overlap": "overlap", "Missed": "missed", "CatchUp": "catch_up", "Grace": "grace",
	"Job.Queue": "job.queue", "Job.Kind": "job.kind", "Job.Payload": "job.payload", "Job.Tenant": "job.tenant",
	"Job.Group": "job.group", "Job.Priority": "job.priority", "Job.MaxAttempts": "job.max_attempts",
	"Job.Timeout": "job.timeout",
}

// schedules checks each schedule by the queue package's rules, naming the
// file's key, and that names are unique.
func (v *validator) schedules(list []Schedule) {
	seen := map[string]int{}
	for i, s := range list {
		base := []any{"schedules", i}
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			v.add(p(base, "name"), "duplicate schedule name %q (also schedules[%d])", s.Name, j)
			continue
		}
		seen[s.Name] = i
		q, err := s.Queue()
		if err == nil {
			err = q.Validate(0)
		}
		var ia *queue.InvalidArgumentError
		switch {
		case errors.As(err, &ia):
			rule := ia.Rule
			if strings.Contains(rule, "Cron and Every") { // name both as the file does
				rule = strings.NewReplacer("Cron", "cron", "Every", "every").Replace(rule)
			}
			v.add(scheduleField(base, ia.Path.Name), "%s", rule)
		case err != nil:
			v.add(p(base, "job", "payload"), "%s", err)
		}
	}
}

// scheduleField is the path of a schedule's field named the queue
// package's way.
func scheduleField(base []any, name string) []any {
	key, ok := scheduleKeys[name]
	if !ok {
		return base
	}
	out := base
	for _, part := range strings.Split(key, ".") {
		out = p(out, part)
	}
	return out
}
