package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newRetryCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Run a failed or cancelled job again with fresh attempts (admin)",
		Long: `Run a failed or cancelled job again: it keeps its id and its error history,
its attempts start again from 0, and it is ready at once (or waits for its
tenant's room). Jobs in a group cannot be retried: the group already
counted them finished. A flow's job cannot be retried while a parent has
not completed: retry its failed or cancelled parent instead, which puts
the job back to wait for it.`,
		Args: cobra.ExactArgs(1),
		RunE: jobAction(cf, "retry"),
	}
}

// queuePause is the answer of the pause and resume routes.
type queuePause struct {
	Queue       string     `json:"queue"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
}

func newPauseCmds(cf *clientFlags) []*cobra.Command {
	var d time.Duration
	pause := &cobra.Command{
		Use:   "pause QUEUE",
		Short: "Stop workers leasing from a queue, until resumed or for --for (admin)",
		Long: `Stop workers leasing jobs from a queue. Running jobs go on. Without --for the
queue stays paused until "sluice queue resume"; with it, the pause ends by
itself. A later end already in force is kept.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if d < 0 {
				return fmt.Errorf("--for must not be negative, got %s", d)
			}
			var body any
			if d > 0 {
				body = map[string]any{"duration_ms": max(d.Milliseconds(), 1)}
			}
			return pauseCall(cmd, cf, args[0], "pause", body)
		},
	}
	pause.Flags().DurationVar(&d, "for", 0, "how long to pause, such as 10m (default: until resumed)")
	resume := &cobra.Command{
		Use:   "resume QUEUE",
		Short: "End a queue's pause at once (admin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return pauseCall(cmd, cf, args[0], "resume", nil)
		},
	}
	return []*cobra.Command{pause, resume}
}

func pauseCall(cmd *cobra.Command, cf *clientFlags, queue, verb string, body any) error {
	var p queuePause
	raw, err := cf.client().callJSON(cmd.Context(), "POST", "/v1/queues/"+pathEscape(queue)+"/"+verb, body, &p)
	if err != nil {
		return err
	}
	if cf.json {
		printJSON(cmd.OutOrStdout(), raw)
		return nil
	}
	fmt.Fprintln(cmd.OutOrStdout(), pauseText(p.Queue, p.PausedUntil))
	return nil
}

// indefinite is how far off a pause's end must be to read "until
// resumed": the server pauses for a hundred years when no duration is
// given.
const indefinite = 50 * 365 * 24 * time.Hour

func pauseText(queue string, until *time.Time) string {
	switch {
	case until == nil:
		return fmt.Sprintf("queue %s: not paused", queue)
	case time.Until(*until) > indefinite:
		return fmt.Sprintf("queue %s: paused until resumed", queue)
	}
	return fmt.Sprintf("queue %s: paused until %s", queue, until.Local().Format(time.RFC3339))
}
