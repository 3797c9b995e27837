package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// group is the subset of the server's group JSON the command prints.
type group struct {
	ID              string           `json:"id"`
	Jobs            map[string]int64 `json:"jobs"`
	Total           int64            `json:"total"`
	CancelRequested bool             `json:"cancel_requested"`
	Done            bool             `json:"done"`
	CompletionJobID string           `json:"completion_job_id"`
}

func (g group) finished() int64 { return g.Jobs["completed"] + g.Jobs["failed"] + g.Jobs["cancelled"] }

func printGroup(w io.Writer, g group) {
	state := "running"
	switch {
	case g.Done:
		state = "done"
	case g.CancelRequested:
		state = "cancelling"
	}
	fmt.Fprintf(w, "group %s: %s, %d/%d finished (completed %d, failed %d, cancelled %d; active %d, waiting %d, pending %d)\n",
		g.ID, state, g.finished(), g.Total, g.Jobs["completed"], g.Jobs["failed"], g.Jobs["cancelled"], g.Jobs["active"], g.Jobs["waiting"], g.Jobs["pending"])
	if g.CompletionJobID != "" {
		fmt.Fprintf(w, "  completion job %s\n", g.CompletionJobID)
	}
}

func newGroupCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Create, follow and cancel groups of jobs on a running server"}
	var spec struct {
		tenant, completionKind, completionQueue, completionPayload string
		maxConcurrency                                             int
		minInterval, ttl                                           time.Duration
	}
	create := &cobra.Command{
		Use:     "create ID",
		Short:   "Create a group; its jobs join it with --group ID",
		Example: "  sluice group create crawl-42 --max-concurrency 4 --min-interval 1s --completion-kind crawl-report",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{"id": args[0], "tenant": spec.tenant, "max_concurrency": spec.maxConcurrency,
				"min_interval_ms": spec.minInterval.Milliseconds(), "ttl_ms": spec.ttl.Milliseconds(),
				"completion_kind": spec.completionKind, "completion_queue": spec.completionQueue}
			if spec.completionPayload != "" {
				if !json.Valid([]byte(spec.completionPayload)) {
					return fmt.Errorf("--completion-payload must be JSON")
				}
				body["completion_payload"] = json.RawMessage(spec.completionPayload)
			}
			return groupCall(cmd, cf, "POST", "/v1/groups", body)
		},
	}
	fl := create.Flags()
	fl.StringVar(&spec.tenant, "tenant", "", "tenant the completion job runs for")
	fl.IntVar(&spec.maxConcurrency, "max-concurrency", 0, "jobs of the group that may run at once (0: no limit)")
	fl.DurationVar(&spec.minInterval, "min-interval", 0, "least time between two starts (crawl delay)")
	fl.DurationVar(&spec.ttl, "ttl", 0, "cancel the group this long after creation (0: never)")
	fl.StringVar(&spec.completionKind, "completion-kind", "", "kind of the job enqueued once every job has finished")
	fl.StringVar(&spec.completionQueue, "completion-queue", "", "queue of the completion job (default \"default\")")
	fl.StringVar(&spec.completionPayload, "completion-payload", "", "payload of the completion job, JSON (default the group's report)")
	get := &cobra.Command{
		Use: "get ID", Short: "Show a group's progress", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCall(cmd, cf, "GET", "/v1/groups/"+pathEscape(args[0]), nil)
		},
	}
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel a group's jobs (running ones are signalled)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return groupCall(cmd, cf, "POST", "/v1/groups/"+pathEscape(args[0])+"/cancel", nil)
		},
	}
	wait := &cobra.Command{
		Use: "wait ID", Short: "Wait until a group is done, with a progress bar", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return waitGroup(cmd, cf, args[0]) },
	}
	cmd.AddCommand(create, get, cancel, wait, newBackOffCmd(cf, "group"))
	return cmd
}

func groupCall(cmd *cobra.Command, cf *clientFlags, method, path string, body any) error {
	var g group
	raw, err := cf.client().callJSON(cmd.Context(), method, path, body, &g)
	if err != nil {
		return err
	}
	if cf.json {
		printJSON(cmd.OutOrStdout(), raw)
		return nil
	}
	printGroup(cmd.OutOrStdout(), g)
	return nil
}

// waitGroup polls the group until it is done, showing its jobs by state;
// the bar's total follows the group's as jobs join it.
func waitGroup(cmd *cobra.Command, cf *clientFlags, id string) error {
	c := cf.client()
	p := newProgress(cmd.ErrOrStderr(), "group "+id)
	for {
		var g group
		if _, err := c.callJSON(cmd.Context(), "GET", "/v1/groups/"+pathEscape(id), nil, &g); err != nil {
			return err
		}
		if !g.Done {
			p.draw(g.Total, g.Jobs)
			if err := sleep(cmd.Context(), 500*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		p.finish(g.Total, g.Jobs)
		printGroup(cmd.OutOrStdout(), g)
		if g.Jobs["failed"] > 0 || g.Jobs["cancelled"] > 0 {
			return &exitError{code: 1, msg: "not every job of the group completed"}
		}
		return nil
	}
}
