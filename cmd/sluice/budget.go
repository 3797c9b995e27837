package main

import (
	"fmt"
	"io"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// budgetState is the server's budget JSON.
type budgetState struct {
	Budget      string  `json:"budget"`
	Tenant      string  `json:"tenant"`
	ClosedForMS int64   `json:"closed_for_ms"`
	Factor      float64 `json:"factor"`
	Limits      []struct {
		Scope      string `json:"scope"`
		Limit      string `json:"limit"`
		Capacity   int64  `json:"capacity"`
		Used       int64  `json:"used"`
		Room       int64  `json:"room"`
		NextRoomMS int64  `json:"next_room_ms"`
	} `json:"limits"`
}

func printBudgets(w io.Writer, list []budgetState) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tSCOPE\tLIMIT\tUSED\tCAPACITY\tROOM\tNEXT ROOM")
	for _, b := range list {
		if b.ClosedForMS > 0 {
			fmt.Fprintf(tw, "%s\t\tclosed\t\t\t\t%s\n", b.Budget, ms(b.ClosedForMS).String())
		}
		if b.Factor > 0 && b.Factor < 1 {
			fmt.Fprintf(tw, "%s\t\tslowed to %.0f%%\t\t\t\t\n", b.Budget, 100*b.Factor)
		}
		for _, l := range b.Limits {
			next := "-"
			if l.Room == 0 {
				next = ms(l.NextRoomMS).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", b.Budget, l.Scope, l.Limit, l.Used, l.Capacity, l.Room, next)
		}
	}
	tw.Flush()
}

func newBudgetCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "budget", Short: "Inspect and close the shared upstream budgets of a running server"}
	list := &cobra.Command{
		Use: "list", Short: "Every budget's totals: used, capacity, room and when room returns", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var out struct {
				Budgets []budgetState `json:"budgets"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "GET", "/v1/budgets", nil, &out)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			printBudgets(cmd.OutOrStdout(), out.Budgets)
			return nil
		},
	}
	var tenant string
	get := &cobra.Command{
		Use: "get NAME", Short: "A budget's limits, with a tenant's own limits when --tenant is given", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/budgets/" + pathEscape(args[0])
			if tenant != "" {
				path += "?tenant=" + url.QueryEscape(tenant)
			}
			var b budgetState
			raw, err := cf.client().callJSON(cmd.Context(), "GET", path, nil, &b)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			printBudgets(cmd.OutOrStdout(), []budgetState{b})
			return nil
		},
	}
	get.Flags().StringVar(&tenant, "tenant", "", "include this tenant's own limits, ceiling and floor")
	var forD time.Duration
	var until string
	closeCmd := &cobra.Command{
		Use:   "close NAME",
		Short: "Close a budget for the whole fleet (the upstream said 429): nothing on it starts until then",
		Example: `  sluice budget close openai --for 30s
  sluice budget close openai --until 2030-01-02T15:04:05Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]any{}
			switch {
			case (forD > 0) == (until != ""):
				return fmt.Errorf("set exactly one of --for and --until")
			case forD > 0:
				body["retry_after_ms"] = max(1, forD.Milliseconds())
			default:
				body["until"] = until
			}
			var out struct {
				ClosedUntil time.Time `json:"closed_until"`
			}
			raw, err := cf.client().callJSON(cmd.Context(), "POST", "/v1/budgets/"+pathEscape(args[0])+"/close", body, &out)
			if err != nil {
				return err
			}
			if cf.json {
				printJSON(cmd.OutOrStdout(), raw)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "budget %s closed until %s\n", args[0], out.ClosedUntil.Local().Format(time.RFC3339))
			return nil
		},
	}
	closeCmd.Flags().DurationVar(&forD, "for", 0, "close for this long from now, such as 30s")
	closeCmd.Flags().StringVar(&until, "until", "", "close until this time (RFC 3339)")
	cmd.AddCommand(list, get, closeCmd)
	return cmd
}
