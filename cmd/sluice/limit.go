package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newLimitCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "limit", Short: "Ask a running server for rate-limit decisions"}
	var cost int64
	var wait time.Duration
	var atMost bool
	consume := &cobra.Command{
		Use:   "consume SCENE POLICY FIELD=VALUE...",
		Short: "Count a call against a policy and print the decision (exit code 2 when denied)",
		Example: `  sluice limit consume member export-usage member=42
  sluice limit consume out-link request out-link=L1 uid=visitor-7 --cost 2`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return limit(cmd, cf, args, cost, false, consumeOptions(wait, atMost))
		},
	}
	consume.Flags().Int64Var(&cost, "cost", 1, "cost of the call (0 peeks)")
	consume.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for admission instead of being refused (at most 60s)")
	consume.Flags().BoolVar(&atMost, "at-most", false, "take as much of --cost as the limits admit (a partial grant)")
	peek := &cobra.Command{
		Use:   "peek SCENE POLICY FIELD=VALUE...",
		Short: "Show what is left of a policy's limits without counting",
		Args:  cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return limit(cmd, cf, args, 0, true, nil)
		},
	}
	cmd.AddCommand(consume, peek)
	cmd.AddCommand(limitOpsCmds(cf)...) // limit_ops.go
	return cmd
}

type decision struct {
	Allowed      bool   `json:"allowed"`
	Scene        string `json:"scene"`
	Policy       string `json:"policy"`
	Detail       string `json:"detail"`
	ShadowDenied bool   `json:"shadow_denied"`
	FailureMode  string `json:"failure_mode"`
	RetryAfterMS int64  `json:"retry_after_ms"`
	Limits       []struct {
		Quota        int64  `json:"quota"`
		Window       string `json:"window"`
		Algorithm    string `json:"algorithm"`
		Allowed      bool   `json:"allowed"`
		Remaining    int64  `json:"remaining"`
		ResetAfterMS int64  `json:"reset_after_ms"`
	} `json:"limits"`
}

func limit(cmd *cobra.Command, cf *clientFlags, args []string, cost int64, peek bool, extra map[string]any) error {
	subject := map[string]string{}
	for _, kv := range args[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("subject must be FIELD=VALUE, got %q", kv)
		}
		subject[k] = v
	}
	path := "/v1/limits/" + pathEscape(args[0]) + "/" + pathEscape(args[1])
	if peek {
		path += "/peek"
	}
	body := map[string]any{"subject": subject, "cost": cost}
	for k, v := range extra {
		body[k] = v
	}
	status, raw, err := cf.client().call(cmd.Context(), "POST", path, body, http.StatusTooManyRequests)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if cf.json {
		printJSON(out, raw)
	} else {
		var d decision
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("unexpected answer from the server: %w", err)
		}
		printDecision(out, d, peek)
	}
	if status == http.StatusTooManyRequests {
		return &exitError{code: 2}
	}
	return nil
}

func printDecision(w io.Writer, d decision, peek bool) {
	verdict := "allowed"
	switch {
	case peek:
		verdict = "peek"
	case !d.Allowed:
		verdict = "denied"
	case d.ShadowDenied:
		verdict = "allowed (shadow mode: over the limit)"
	case d.FailureMode != "":
		verdict = "allowed (store unavailable, failing open)"
	}
	fmt.Fprintf(w, "%s %s/%s\n", verdict, d.Scene, d.Policy)
	for _, l := range d.Limits {
		fmt.Fprintf(w, "  %d per %s (%s): %d left, resets in %s\n", l.Quota, l.Window, l.Algorithm, l.Remaining, ms(l.ResetAfterMS).Round(time.Second))
	}
	if !d.Allowed && !peek {
		fmt.Fprintf(w, "  retry after %s\n", ms(d.RetryAfterMS))
	}
}
