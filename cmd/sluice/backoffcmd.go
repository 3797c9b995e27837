package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// backOffReply is the answer of the back-off routes.
type backOffReply struct {
	Tenant      string     `json:"tenant"`
	Group       string     `json:"group"`
	PausedUntil *time.Time `json:"paused_until"`
}

// newBackOffCmd is "sluice tenant backoff" or "sluice group backoff"
// (queue.Client.BackOff over POST /v1/{tenants,groups}/{name}/backoff).
func newBackOffCmd(cf *clientFlags, kind string) *cobra.Command {
	var d time.Duration
	arg := "TENANT"
	if kind == "group" {
		arg = "ID"
	}
	cmd := &cobra.Command{
		Use:   "backoff " + arg + " --for DURATION",
		Short: fmt.Sprintf("Start none of a %s's jobs for a while, such as after an upstream's 429 (worker)", kind),
		Long: fmt.Sprintf(`Start none of the %s's jobs until --for has passed; running jobs go on and
the %s resumes by itself. A later end already in force is kept; --for 0
resumes at once.`, kind, kind),
		Example: fmt.Sprintf("  sluice %s backoff %s --for 1m", kind, map[string]string{"tenant": "acme", "group": "crawl-42"}[kind]),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if d < 0 {
				return fmt.Errorf("--for must not be negative, got %s", d)
			}
			ms := d.Milliseconds()
			if d > 0 && ms == 0 {
				ms = 1 // a positive duration under 1ms still backs off
			}
			var p backOffReply
			path := "/v1/" + kind + "s/" + pathEscape(args[0]) + "/backoff"
			raw, err := cf.client().callJSON(cmd.Context(), "POST", path, map[string]any{"duration_ms": ms}, &p)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			if p.PausedUntil == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: not backed off\n", kind, args[0])
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s: backed off until %s\n", kind, args[0], p.PausedUntil.Local().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().DurationVar(&d, "for", 0, "how long to back off, such as 30s or 5m (0 resumes)")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}
