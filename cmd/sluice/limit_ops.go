package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// consumeOptions is the body of consume's --wait and --at-most.
func consumeOptions(wait time.Duration, atMost bool) map[string]any {
	out := map[string]any{}
	if wait > 0 {
		out["wait_ms"] = wait.Milliseconds()
	}
	if atMost {
		out["at_most"] = true
	}
	return out
}

// subjectArgs turns FIELD=VALUE arguments into a subject object.
func subjectArgs(args []string) (map[string]string, error) {
	subject := map[string]string{}
	for _, kv := range args {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("subject must be FIELD=VALUE, got %q", kv)
		}
		subject[k] = v
	}
	return subject, nil
}

// limitCall posts body to a policy's route and prints the answer as JSON;
// a 429 exits with code 2.
func limitCall(cmd *cobra.Command, cf *clientFlags, method, path string, body any) error {
	status, raw, err := cf.client().call(cmd.Context(), method, path, body, http.StatusTooManyRequests)
	if err != nil {
		return err
	}
	printJSON(cmd.OutOrStdout(), raw)
	if status == http.StatusTooManyRequests {
		return &exitError{code: 2}
	}
	return nil
}

func policyPath(prefix string, args []string, suffix string) string {
	return prefix + pathEscape(args[0]) + "/" + pathEscape(args[1]) + suffix
}

// subjectCmd is a command taking SCENE POLICY FIELD=VALUE... and posting
// the subject (with extra fields) to the policy's route suffix.
func subjectCmd(cf *clientFlags, use, short, suffix string, min int, extra func(args []string) map[string]any) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.MinimumNArgs(min),
		RunE: func(cmd *cobra.Command, args []string) error {
			rest := args[2:]
			body := map[string]any{}
			if extra != nil {
				body = extra(args)
				rest = args[3:]
			}
			subject, err := subjectArgs(rest)
			if err != nil {
				return err
			}
			body["subject"] = subject
			return limitCall(cmd, cf, "POST", policyPath("/v1/limits/", args, suffix), body)
		},
	}
}

func limitOpsCmds(cf *clientFlags) []*cobra.Command {
	release := subjectCmd(cf, "release SCENE POLICY LEASE-ID FIELD=VALUE...", "Release an in-flight lease", "/release", 4,
		func(args []string) map[string]any { return map[string]any{"lease_id": args[2]} })
	return []*cobra.Command{
		subjectCmd(cf, "acquire SCENE POLICY FIELD=VALUE...", "Take an in-flight lease (exit code 2 when the limit is full)", "/acquire", 3, nil),
		release,
		subjectCmd(cf, "inspect SCENE POLICY FIELD=VALUE...", "Show a subject's counters, leases and override (admin)", "/inspect", 3, nil),
		subjectCmd(cf, "reset SCENE POLICY FIELD=VALUE...", "Reset a subject's counters and leases (admin; audited)", "/reset", 3, nil),
		overrideCmd(cf),
	}
}

func overrideCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "override", Short: "List, set and delete per-subject overrides (admin)"}
	list := &cobra.Command{Use: "list", Short: "List every override", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return limitCall(cmd, cf, "GET", "/v1/limit-overrides", nil)
		}}
	var limits []string
	var unlimited bool
	var inFlight int64
	var leaseTTL time.Duration
	set := &cobra.Command{
		Use:     "set SCENE POLICY [FIELD=VALUE...]",
		Short:   "Set an override; without a subject it applies to the whole policy",
		Example: `  sluice limit override set member chat member=42 --limit 6000/1m`,
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := overrideBody(args[2:], limits, unlimited, inFlight, leaseTTL)
			if err != nil {
				return err
			}
			return limitCall(cmd, cf, "PUT", policyPath("/v1/limit-overrides/", args, ""), body)
		},
	}
	set.Flags().StringArrayVar(&limits, "limit", nil, "a limit QUOTA/WINDOW[/ALGORITHM], such as 6000/1m or 10/1s/token-bucket (repeatable)")
	set.Flags().BoolVar(&unlimited, "unlimited", false, "admit every call without counting")
	set.Flags().Int64Var(&inFlight, "in-flight", 0, "the most calls running at once")
	set.Flags().DurationVar(&leaseTTL, "lease-ttl", 0, "the in-flight lease TTL (default 1m)")
	del := &cobra.Command{
		Use: "delete SCENE POLICY [FIELD=VALUE...]", Short: "Delete a dynamic override", Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			subject, err := subjectArgs(args[2:])
			if err != nil {
				return err
			}
			return limitCall(cmd, cf, "DELETE", policyPath("/v1/limit-overrides/", args, ""), map[string]any{"subject": subject})
		},
	}
	cmd.AddCommand(list, set, del)
	return cmd
}

func overrideBody(subjectKV, limits []string, unlimited bool, inFlight int64, ttl time.Duration) (map[string]any, error) {
	subject, err := subjectArgs(subjectKV)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"subject": subject, "unlimited": unlimited}
	var ls []map[string]any
	for _, l := range limits {
		parts := strings.Split(l, "/")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("--limit must be QUOTA/WINDOW[/ALGORITHM], got %q", l)
		}
		var q int64
		if err := json.Unmarshal([]byte(parts[0]), &q); err != nil {
			return nil, fmt.Errorf("--limit %q: quota must be an integer", l)
		}
		spec := map[string]any{"quota": q, "window": parts[1]}
		if len(parts) == 3 {
			spec["algorithm"] = parts[2]
		}
		ls = append(ls, spec)
	}
	if len(ls) > 0 {
		body["limits"] = ls
	}
	if inFlight > 0 {
		body["in_flight"] = map[string]any{"max": inFlight, "ttl_ms": ttl.Milliseconds()}
	}
	return body, nil
}
