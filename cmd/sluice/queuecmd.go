package main

import (
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

var statsStates = []string{"scheduled", "pending", "waiting", "active", "retrying", "completed", "failed", "cancelled"}

func newQueueCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "queue", Short: "Inspect, pause and resume queues on a running server"}
	cmd.AddCommand(newPauseCmds(cf)...)
	cmd.AddCommand(&cobra.Command{
		Use:   "stats",
		Short: "Job counts per queue and state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var stats struct {
				Queues []struct {
					Queue       string           `json:"queue"`
					Total       int64            `json:"total"`
					Counts      map[string]int64 `json:"counts"`
					PausedUntil *time.Time       `json:"paused_until"`
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
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, q := range stats.Queues {
				if q.PausedUntil != nil {
					fmt.Fprintln(cmd.OutOrStdout(), pauseText(q.Queue, q.PausedUntil))
				}
			}
			return nil
		},
	})
	return cmd
}

type tenantInfo struct {
	Tenant    string           `json:"tenant"`
	Effective tenantSettings   `json:"effective"`
	Own       tenantSettings   `json:"own"`
	Jobs      map[string]int64 `json:"jobs"`
}

type tenantSettings struct {
	Limit     int   `json:"limit"`
	Weight    int   `json:"weight"`
	Backlog   int   `json:"backlog"`
	MaxWaitMS int64 `json:"max_wait_ms"`
}

func printTenant(w io.Writer, t tenantInfo) {
	limit := fmt.Sprint(t.Effective.Limit)
	if t.Effective.Limit < 0 {
		limit = "unlimited"
	}
	fmt.Fprintf(w, "tenant %s: concurrency %s, weight %d, backlog cap %d\n", t.Tenant, limit, t.Effective.Weight, t.Effective.Backlog)
	fmt.Fprintf(w, "  active %d, waiting %d, pending %d, scheduled %d, retrying %d\n",
		t.Jobs["active"], t.Jobs["waiting"], t.Jobs["pending"], t.Jobs["scheduled"], t.Jobs["retrying"])
}

func newTenantCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "Tenant limits on a running server"}
	var concurrency int
	set := &cobra.Command{
		Use:   "set-limit TENANT",
		Short: "Set a tenant's concurrency limit (0 follows the default, -1 lifts it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tenantCall(cmd, cf, "PUT", args[0], "/limit", map[string]any{"concurrency": concurrency})
		},
	}
	set.Flags().IntVar(&concurrency, "concurrency", 0, "jobs of the tenant that may run at once")
	_ = set.MarkFlagRequired("concurrency")
	get := &cobra.Command{
		Use:   "get TENANT",
		Short: "Show a tenant's settings and jobs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tenantCall(cmd, cf, "GET", args[0], "", nil)
		},
	}
	cmd.AddCommand(set, get, newTenantListCmd(cf), newBackOffCmd(cf, "tenant"))
	return cmd
}

func newTenantListCmd(cf *clientFlags) *cobra.Command {
	var cursor string
	var limit int
	var busiest bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tenants with jobs or settings, by name or busiest first, one page at a time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if busiest {
				q.Set("order", "busiest")
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if limit > 0 {
				q.Set("limit", fmt.Sprint(limit))
			}
			var page struct {
				Tenants []tenantInfo `json:"tenants"`
				Next    string       `json:"next"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/tenants?"+q.Encode(), nil, &page)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			printTenants(cmd.OutOrStdout(), page.Tenants)
			if page.Next != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "more: --cursor %s\n", page.Next)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&busiest, "busiest", false, "most active first, then most pending or waiting (a cursor belongs to the order it was read in)")
	fl.IntVar(&limit, "limit", 0, "page size (default 100, at most 1000)")
	fl.StringVar(&cursor, "cursor", "", "continue from a previous page")
	return cmd
}

func printTenants(w io.Writer, ts []tenantInfo) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tLIMIT\tACTIVE\tWAITING\tPENDING\tSCHEDULED\tRETRYING")
	for _, t := range ts {
		limit := fmt.Sprint(t.Effective.Limit)
		if t.Effective.Limit < 0 {
			limit = "unlimited"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", t.Tenant, limit, t.Jobs["active"], t.Jobs["waiting"],
			t.Jobs["pending"], t.Jobs["scheduled"], t.Jobs["retrying"])
	}
	tw.Flush()
}

func tenantCall(cmd *cobra.Command, cf *clientFlags, method, tenant, suffix string, body any) error {
	var t tenantInfo
	raw, err := cf.client().callJSON(cmd.Context(), method, "/v1/tenants/"+pathEscape(tenant)+suffix, body, &t)
	if err != nil {
		return err
	}
	if cf.json {
		printJSON(cmd.OutOrStdout(), raw)
		return nil
	}
	printTenant(cmd.OutOrStdout(), t)
	return nil
}
