package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

var statsStates = []string{"scheduled", "pending", "waiting", "active", "retrying", "completed", "failed", "cancelled"}

func newQueueCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "queue", Short: "Inspect queues on a running server"}
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Job counts per queue and state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var stats struct {
				Queues []struct {
					Queue  string           `json:"queue"`
					Total  int64            `json:"total"`
					Counts map[string]int64 `json:"counts"`
				} `json:"queues"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/queues/stats", nil, &stats)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "QUEUE\t")
			for _, s := range statsStates {
				fmt.Fprintf(tw, "%s\t", s)
			}
			fmt.Fprintln(tw, "total\t")
			for _, q := range stats.Queues {
				fmt.Fprintf(tw, "%s\t", q.Queue)
				for _, s := range statsStates {
					fmt.Fprintf(tw, "%d\t", q.Counts[s])
				}
				fmt.Fprintf(tw, "%d\t\n", q.Total)
			}
			return tw.Flush()
		},
	})
	return cmd
}

func newTenantCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "Tenant limits on a running server"}
	var concurrency int
	set := &cobra.Command{
		Use:   "set-limit TENANT",
		Short: "Set a tenant's concurrency limit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := cf.client().callJSON(cmd.Context(), "PUT", "/v1/tenants/"+pathEscape(args[0])+"/limit", map[string]any{"concurrency": concurrency}, nil)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s: concurrency %d\n", args[0], concurrency)
			return nil
		},
	}
	set.Flags().IntVar(&concurrency, "concurrency", 0, "jobs of the tenant that may run at once (0: no limit)")
	cmd.AddCommand(set)
	return cmd
}
