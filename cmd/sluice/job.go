package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// job is the subset of the server's job JSON the command prints.
type job struct {
	ID          string          `json:"id"`
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	State       string          `json:"state"`
	Tenant      string          `json:"tenant"`
	Priority    int             `json:"priority"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	LastError   string          `json:"last_error"`
	Result      json.RawMessage `json:"result"`
	CreatedAt   time.Time       `json:"created_at"`
	flowJob
	Progress *jobProgress `json:"progress"`
	Hold     *jobHold     `json:"hold"`
}

// jobHold is what holds a waiting job back: a budget's limit.
type jobHold struct {
	Budget string    `json:"budget"`
	Limit  string    `json:"limit"`
	Scope  string    `json:"scope"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

func (j job) final() bool {
	return j.State == "completed" || j.State == "failed" || j.State == "cancelled"
}

type specFlags struct {
	queue, kind, payload, tenant, group, uniqueKey string
	priority, maxAttempts                          int
	delay                                          time.Duration
	deps                                           depFlags
	hook                                           hookFlags // jobhook.go
}

func (f *specFlags) spec() (map[string]any, error) {
	s := map[string]any{"queue": f.queue, "kind": f.kind}
	if f.payload != "" {
		if !json.Valid([]byte(f.payload)) {
			return nil, fmt.Errorf("--payload must be JSON, such as '{\"to\":\"a@example.com\"}'")
		}
		s["payload"] = json.RawMessage(f.payload)
	}
	for k, v := range map[string]string{"tenant": f.tenant, "group": f.group, "unique_key": f.uniqueKey} {
		if v != "" {
			s[k] = v
		}
	}
	if f.priority != 0 {
		s["priority"] = f.priority
	}
	if f.maxAttempts != 0 {
		s["max_attempts"] = f.maxAttempts
	}
	if f.delay > 0 {
		s["delay_ms"] = f.delay.Milliseconds()
	}
	f.deps.apply(s)
	return s, f.hook.add(s)
}

func newJobCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "job", Short: "Enqueue, inspect, cancel and retry jobs on a running server"}
	cmd.AddCommand(newEnqueueCmd(cf), newGetCmd(cf), newCancelCmd(cf), newRetryCmd(cf), newListCmd(cf), &cobra.Command{
		Use:   "wait ID...",
		Short: "Wait until the jobs finish, showing each job's progress (exit code 1 unless all completed)",
		Args:  cobra.MinimumNArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return waitJobs(cmd, cf, args) },
	})
	return cmd
}

func newEnqueueCmd(cf *clientFlags) *cobra.Command {
	f := &specFlags{}
	var file string
	var wait bool
	cmd := &cobra.Command{
		Use:   "enqueue",
		Short: "Enqueue one job, or many from a file of JSON lines (with a progress bar)",
		Example: `  sluice job enqueue --queue mail --kind send --payload '{"to":"a@example.com"}'
  sluice job enqueue --file jobs.jsonl --wait   # one job spec per line`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file != "" {
				return enqueueFile(cmd, cf, file, wait)
			}
			if f.queue == "" || f.kind == "" {
				return fmt.Errorf("--queue and --kind are required (or --file)")
			}
			spec, err := f.spec()
			if err != nil {
				return err
			}
			var res struct {
				Job       job  `json:"job"`
				Duplicate bool `json:"duplicate"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "POST", "/v1/jobs", spec, &res)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
			} else if res.Duplicate {
				fmt.Fprintf(cmd.OutOrStdout(), "duplicate of %s (%s)\n", res.Job.ID, res.Job.State)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "enqueued %s (%s)\n", res.Job.ID, res.Job.State)
			}
			if wait {
				return waitJobs(cmd, cf, []string{res.Job.ID})
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.queue, "queue", "", "queue name")
	fl.StringVar(&f.kind, "kind", "", "job kind (selects the worker's handler)")
	fl.StringVar(&f.payload, "payload", "", "payload, a JSON value")
	fl.StringVar(&f.tenant, "tenant", "", "tenant the job runs for")
	fl.StringVar(&f.group, "group", "", "group the job belongs to")
	fl.StringVar(&f.uniqueKey, "unique-key", "", "unique key within the queue")
	f.deps.register(cmd)
	f.hook.register(fl)
	fl.IntVar(&f.priority, "priority", 0, "priority, lower runs first")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts before the job fails for good (default 25)")
	fl.DurationVar(&f.delay, "delay", 0, "run after this delay, such as 30s")
	fl.StringVar(&file, "file", "", "enqueue the job specs in FILE, one JSON object per line ('-' for stdin)")
	fl.BoolVar(&wait, "wait", false, "wait until the jobs finish, with a progress bar")
	return cmd
}

// enqueueFile sends the file's specs in batches of up to 500.
func enqueueFile(cmd *cobra.Command, cf *clientFlags, path string, wait bool) error {
	specs, err := readSpecs(cmd.InOrStdin(), path)
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	tty := isTerminal(w) // elsewhere one line per batch instead of a bar
	var bar *progressbar.ProgressBar
	if tty {
		bar = newBar(w, len(specs), "enqueue")
	}
	c := cf.client()
	ids := make([]string, 0, len(specs))
	for start := 0; start < len(specs); start += 500 {
		batch := specs[start:min(start+500, len(specs))]
		var res struct {
			Jobs []struct {
				Job job `json:"job"`
			} `json:"jobs"`
		}
		if _, err := c.callJSON(cmd.Context(), "POST", "/v1/jobs/batch", map[string]any{"jobs": batch}, &res); err != nil {
			return fmt.Errorf("lines %d-%d: %w (earlier lines were enqueued)", start+1, start+len(batch), err)
		}
		for _, r := range res.Jobs {
			ids = append(ids, r.Job.ID)
		}
		if !tty {
			fmt.Fprintf(w, "enqueue: %d/%d\n", len(ids), len(specs))
			continue
		}
		_ = bar.Add(len(batch))
	}
	if tty {
		_ = bar.Finish()
	}
	fmt.Fprintf(cmd.OutOrStdout(), "enqueued %d jobs\n", len(ids))
	if wait {
		return waitJobs(cmd, cf, ids)
	}
	return nil
}

func readSpecs(stdin io.Reader, path string) ([]json.RawMessage, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var specs []json.RawMessage
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 2<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !json.Valid([]byte(line)) {
			return nil, fmt.Errorf("%s:%d: not a JSON object", path, n)
		}
		specs = append(specs, json.RawMessage(line))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: no job specs", path)
	}
	return specs, nil
}

func newBar(w io.Writer, n int, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
}

// waitJobs waits until every job is final, showing each job's own state
// and progress from its first read on (waitView), and fails when any did
// not complete. One job is long-polled, so its end is seen at once;
// several are read in turn every half second.
func waitJobs(cmd *cobra.Command, cf *clientFlags, ids []string) error {
	c := cf.client()
	ids = distinct(ids) // a job named twice is waited for once
	v := newWaitView(cmd.ErrOrStderr(), ids)
	path := func(id string) string { return "/v1/jobs/" + pathEscape(id) }
	if len(ids) == 1 {
		path = func(id string) string { return fmt.Sprintf("/v1/jobs/%s?wait=%s", pathEscape(id), waitPoll) }
	}
	for pending := ids; len(pending) > 0; {
		var still []string
		for _, id := range pending {
			var j job
			if _, err := c.callJSON(cmd.Context(), "GET", path(id), nil, &j); err != nil {
				return err
			}
			v.update(j)
			if !j.final() {
				still = append(still, id)
			}
		}
		v.flush()
		if pending = still; len(pending) > 0 && len(ids) > 1 {
			if err := sleep(cmd.Context(), 500*time.Millisecond); err != nil {
				return err
			}
		}
	}
	v.finish()
	counts := v.counts()
	fmt.Fprintf(cmd.OutOrStdout(), "completed %d, failed %d, cancelled %d\n", counts["completed"], counts["failed"], counts["cancelled"])
	if counts["completed"] != int64(len(ids)) {
		return &exitError{code: 1, msg: "not every job completed"}
	}
	return nil
}

// distinct is ids without repeats, in their first order.
func distinct(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newGetCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var j job
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/jobs/"+pathEscape(args[0]), nil, &j)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			printJob(cmd.OutOrStdout(), j)
			return nil
		},
	}
}

func printJob(w io.Writer, j job) {
	fmt.Fprintf(w, "%s  %s/%s  %s  attempt %d/%d", j.ID, j.Queue, j.Kind, j.State, j.Attempt, j.MaxAttempts)
	if j.Tenant != "" {
		fmt.Fprintf(w, "  tenant %s", j.Tenant)
	}
	fmt.Fprintln(w)
	if j.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", j.LastError)
	}
	if len(j.Result) > 0 {
		fmt.Fprintf(w, "  result: %s\n", j.Result)
	}
	if h := j.Hold; h != nil {
		fmt.Fprintf(w, "  held: %s (room expected by %s)\n", h.Reason, h.Until.Format(time.RFC3339))
	}
	printRelatives(w, j.flowJob)
	printProgress(w, j.Progress) // jobprogress.go
}

// jobAction runs POST /v1/jobs/{id}/<action> on the job named by the
// command's argument and prints the job as it is after the call.
func jobAction(cf *clientFlags, action string) func(cmd *cobra.Command, args []string) error {
	return func(cmd *cobra.Command, args []string) error {
		var j job
		raw, err := cf.client().callJSON(cmd.Context(), "POST", "/v1/jobs/"+pathEscape(args[0])+"/"+action, nil, &j)
		if err != nil {
			return err
		}
		if cf.json {
			printJSON(cmd.OutOrStdout(), raw)
			return nil
		}
		printJob(cmd.OutOrStdout(), j)
		return nil
	}
}

func newCancelCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job (a running one is signalled through its worker's heartbeat)",
		Args:  cobra.ExactArgs(1),
		RunE:  jobAction(cf, "cancel"),
	}
}

func newListCmd(cf *clientFlags) *cobra.Command {
	var queue, state, tenant, kind, group, cursor string
	var limit int
	var newest bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, oldest (or newest) first, one page at a time",
		Long: "List jobs, oldest first (--newest: newest first), one page at a time. Filters are exact\n" +
			"matches and all must hold. A page may be short, even empty, and still say \"more\": the\n" +
			"job store bounds the work of one filtered call; go on with --cursor.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			vals := map[string]string{"queue": queue, "state": state, "tenant": tenant, "kind": kind, "group": group, "cursor": cursor}
			for k, v := range vals {
				if v != "" {
					q.Set(k, v)
				}
			}
			if newest {
				q.Set("order", "newest")
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			var page struct {
				Jobs []job  `json:"jobs"`
				Next string `json:"next"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/jobs?"+q.Encode(), nil, &page)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tQUEUE\tKIND\tSTATE\tATTEMPT\tTENANT\tCREATED")
			for _, j := range page.Jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Queue, j.Kind, j.State, j.Attempt, j.MaxAttempts, j.Tenant, j.CreatedAt.Format(time.RFC3339))
			}
			tw.Flush()
			if page.Next != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "more: --cursor %s\n", page.Next)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&queue, "queue", "", "only this queue")
	fl.StringVar(&state, "state", "", "only these states, comma-separated")
	fl.StringVar(&tenant, "tenant", "", "only this tenant's jobs")
	fl.StringVar(&kind, "kind", "", "only jobs of this kind")
	fl.StringVar(&group, "group", "", "only this group's jobs")
	fl.BoolVar(&newest, "newest", false, "newest first (a cursor belongs to the order it was read in)")
	fl.IntVar(&limit, "limit", 0, "page size (default 100, at most 1000)")
	fl.StringVar(&cursor, "cursor", "", "continue from a previous page")
	return cmd
}

func pathEscape(s string) string { return url.PathEscape(s) }
