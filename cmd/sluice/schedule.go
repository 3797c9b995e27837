package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// schedule is the subset of the server's schedule JSON the command prints.
type schedule struct {
	Name     string      `json:"name"`
	Cron     string      `json:"cron"`
	EveryMS  int64       `json:"every_ms"`
	TimeZone string      `json:"time_zone"`
	Source   string      `json:"source"`
	Paused   bool        `json:"paused"`
	Next     []time.Time `json:"next"`
	Job      struct {
		Queue string `json:"queue"`
		Kind  string `json:"kind"`
	} `json:"job"`
	LastRun *struct {
		JobID string     `json:"job_id"`
		Tick  *time.Time `json:"tick"`
		At    time.Time  `json:"at"`
		State string     `json:"state"`
	} `json:"last_run"`
}

// when is the schedule's timing as written.
func (s schedule) when() string {
	w := s.Cron
	if w == "" {
		w = "every " + (time.Duration(s.EveryMS) * time.Millisecond).String()
	}
	if s.TimeZone != "" && s.TimeZone != "UTC" {
		w += " (" + s.TimeZone + ")"
	}
	return w
}

func (s schedule) next() string {
	if s.Paused {
		return "paused"
	}
	if len(s.Next) == 0 {
		return "-"
	}
	return s.Next[0].Local().Format(time.RFC3339)
}

func (s schedule) last() string {
	if s.LastRun == nil {
		return "-"
	}
	state := s.LastRun.State
	if state == "" {
		state = "cleaned up"
	}
	return fmt.Sprintf("%s (job %s, %s)", s.LastRun.At.Local().Format(time.RFC3339), s.LastRun.JobID, state)
}

func printSchedules(w io.Writer, list []schedule) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tJOB\tSOURCE\tNEXT\tLAST RUN")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\t%s\n", s.Name, s.when(), s.Job.Queue, s.Job.Kind, s.Source, s.next(), s.last())
	}
	tw.Flush()
}

func printSchedule(w io.Writer, s schedule) {
	fmt.Fprintf(w, "schedule %s: %s, job %s/%s, from %s\n", s.Name, s.when(), s.Job.Queue, s.Job.Kind, s.Source)
	if s.Paused {
		fmt.Fprintln(w, "  paused")
	}
	for _, t := range s.Next {
		fmt.Fprintf(w, "  next %s\n", t.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  last run %s\n", s.last())
}

// scheduleFlags are the flags of schedule set.
type scheduleFlags struct {
	cron, tz, queue, kind, payload, tenant, overlap, missed string
	every, jitter, timeout, grace                           time.Duration
	priority, maxAttempts, catchUp                          int
}

func (f *scheduleFlags) body() (map[string]any, error) {
	job := map[string]any{"queue": f.queue, "kind": f.kind, "tenant": f.tenant, "priority": f.priority,
		"max_attempts": f.maxAttempts, "timeout_ms": f.timeout.Milliseconds()}
	if f.payload != "" {
		if !json.Valid([]byte(f.payload)) {
			return nil, fmt.Errorf("--payload must be JSON")
		}
		job["payload"] = json.RawMessage(f.payload)
	}
	return map[string]any{"cron": f.cron, "every_ms": f.every.Milliseconds(), "time_zone": f.tz, "job": job,
		"jitter_ms": f.jitter.Milliseconds(), "overlap": f.overlap, "missed": f.missed, "catch_up": f.catchUp,
		"grace_ms": f.grace.Milliseconds()}, nil
}

func newScheduleCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "schedule", Short: "Define, inspect, pause and trigger recurring jobs on a running server"}
	var f scheduleFlags
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Create or replace a schedule (one from the config file cannot be changed here)",
		Example: `  sluice schedule set nightly-report --cron "30 2 * * *" --tz Europe/Berlin --queue reports --kind report --payload '{"period":"day"}'
  sluice schedule set heartbeat --every 30s --queue ops --kind ping --overlap skip`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := f.body()
			if err != nil {
				return err
			}
			return scheduleCall(cmd, cf, "PUT", "/v1/schedules/"+pathEscape(args[0]), body)
		},
	}
	fl := set.Flags()
	fl.StringVar(&f.cron, "cron", "", `cron expression: 5 fields or a descriptor such as @hourly or "@every 30s"`)
	fl.DurationVar(&f.every, "every", 0, "fixed interval instead of --cron, such as 15m")
	fl.StringVar(&f.tz, "tz", "", "IANA time zone the cron fields are read in (default UTC)")
	fl.StringVar(&f.queue, "queue", "default", "queue of the job")
	fl.StringVar(&f.kind, "kind", "", "kind of the job (required)")
	fl.StringVar(&f.payload, "payload", "", "payload of the job, JSON")
	fl.StringVar(&f.tenant, "tenant", "", "tenant of the job")
	fl.IntVar(&f.priority, "priority", 0, "priority of the job (lower runs first)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts of the job (0: the default)")
	fl.DurationVar(&f.timeout, "timeout", 0, "timeout of each attempt (0: none)")
	fl.DurationVar(&f.jitter, "jitter", 0, "delay each run by a random duration up to this")
	fl.StringVar(&f.overlap, "overlap", "", "while the last run is unfinished: allow (default), skip or wait")
	fl.StringVar(&f.missed, "missed", "", "ticks missed while down: once (default), catchup or skip")
	fl.IntVar(&f.catchUp, "catch-up", 0, "most missed ticks --missed catchup runs (default 10)")
	fl.DurationVar(&f.grace, "grace", 0, "how late a tick may still run with --missed skip (default 1m)")
	list := &cobra.Command{
		Use: "list", Short: "List schedules with their next tick and last run", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Schedules []schedule `json:"schedules"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/schedules", nil, &out)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			printSchedules(cmd.OutOrStdout(), out.Schedules)
			return nil
		},
	}
	one := func(use, short, method, suffix string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return scheduleCall(cmd, cf, method, "/v1/schedules/"+pathEscape(args[0])+suffix, nil)
			},
		}
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "Delete a schedule (its jobs stay)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := cf.client().call(cmd.Context(), "DELETE", "/v1/schedules/"+pathEscape(args[0]), nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schedule %s deleted\n", args[0])
			return nil
		},
	}
	trigger := &cobra.Command{
		Use: "trigger NAME", Short: "Enqueue the schedule's job now", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Job struct {
					ID string `json:"id"`
				} `json:"job"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "POST", "/v1/schedules/"+pathEscape(args[0])+"/trigger", nil, &out)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "enqueued job %s\n", out.Job.ID)
			return nil
		},
	}
	cmd.AddCommand(set, list, one("get", "Show a schedule", "GET", ""), del,
		one("pause", "Pause a schedule", "POST", "/pause"), one("resume", "Resume a schedule (ticks missed while paused never run)", "POST", "/resume"), trigger)
	return cmd
}

func scheduleCall(cmd *cobra.Command, cf *clientFlags, method, path string, body any) error {
	var s schedule
	raw, err := cf.client().callJSON(cmd.Context(), method, path, body, &s)
	if err != nil {
		return err
	}
	if cf.json {
		printJSON(cmd.OutOrStdout(), raw)
		return nil
	}
	printSchedule(cmd.OutOrStdout(), s)
	return nil
}
