package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// flowJob is the flow part of the server's job JSON.
type flowJob struct {
	Flow      string   `json:"flow"`
	FlowNode  string   `json:"flow_node"`
	DependsOn []string `json:"depends_on"`
	Parents   []jobRef `json:"parents"`
	Children  []jobRef `json:"children"`
}

// jobRef is a parent or child of a job.
type jobRef struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	State    string `json:"state"`
	FlowNode string `json:"flow_node"`
}

func (r jobRef) String() string {
	name := r.Kind
	if r.FlowNode != "" {
		name = r.FlowNode
	}
	return fmt.Sprintf("%s (%s, %s)", r.ID, name, r.State)
}

// printRelatives prints the flow, parents and children of a job.
func printRelatives(w io.Writer, j flowJob) {
	if j.Flow != "" {
		fmt.Fprintf(w, "  flow %s, node %s\n", j.Flow, j.FlowNode)
	}
	for _, p := range j.Parents {
		fmt.Fprintf(w, "  parent %s\n", p)
	}
	for _, c := range j.Children {
		fmt.Fprintf(w, "  child  %s\n", c)
	}
}

// depFlags are the dependency flags of job enqueue.
type depFlags struct {
	dependsOn       []string
	onParentFailure string
}

func (d *depFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&d.dependsOn, "depends-on", nil, "ids of jobs that must complete first (repeat or comma-separate)")
	fl.StringVar(&d.onParentFailure, "on-parent-failure", "", `when a parent fails: "cancel" (default) or "run"`)
}

func (d *depFlags) apply(s map[string]any) {
	if len(d.dependsOn) > 0 {
		s["depends_on"] = d.dependsOn
	}
	if d.onParentFailure != "" {
		s["on_parent_failure"] = d.onParentFailure
	}
}

// flow is the subset of the server's flow JSON the command prints.
type flow struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Jobs   []flowListJob  `json:"jobs"`
	Counts map[string]int `json:"counts"`
}

type flowListJob struct {
	job
	LastError string `json:"last_error"`
}

// printFlow prints a flow's jobs as a table, parents named by node.
func printFlow(w io.Writer, f flow) {
	fmt.Fprintf(w, "flow %s", f.ID)
	if f.Name != "" {
		fmt.Fprintf(w, " (%s)", f.Name)
	}
	var counts []string
	for _, st := range []string{"blocked", "scheduled", "pending", "waiting", "active", "retrying", "completed", "failed", "cancelled"} {
		if n := f.Counts[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
	}
	fmt.Fprintf(w, ": %d jobs, %s\n", len(f.Jobs), strings.Join(counts, ", "))
	names := map[string]string{}
	for _, j := range f.Jobs {
		names[j.ID] = j.FlowNode
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tID\tQUEUE/KIND\tSTATE\tAFTER")
	for _, j := range f.Jobs {
		after := make([]string, len(j.DependsOn))
		for i, p := range j.DependsOn {
			if n := names[p]; n != "" {
				after[i] = n
			} else {
				after[i] = p
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s\t%s\n", j.FlowNode, j.ID, j.Queue, j.Kind, j.State, strings.Join(after, ","))
	}
	_ = tw.Flush()
}

func newFlowCmd(cf *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "flow", Short: "Enqueue, show and cancel flows (jobs that depend on others) on a running server"}
	enqueue := &cobra.Command{
		Use:   "enqueue FILE",
		Short: "Enqueue a flow from a JSON file (the body of POST /v1/flows; - reads stdin)",
		Example: `  sluice flow enqueue site.json
  echo '{"nodes":[{"name":"crawl","job":{"queue":"web","kind":"crawl"}},
    {"name":"extract","job":{"queue":"web","kind":"extract"}}],
    "edges":[{"parent":"crawl","child":"extract"}]}' | sluice flow enqueue -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			if !json.Valid(data) {
				return fmt.Errorf("%s: not JSON", args[0])
			}
			return flowCall(cmd, cf, "POST", "/v1/flows", json.RawMessage(data))
		},
	}
	get := &cobra.Command{
		Use: "get ID", Short: "Show a flow: every job with its state and the nodes it waits for", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flowCall(cmd, cf, "GET", "/v1/flows/"+pathEscape(args[0]), nil)
		},
	}
	cancel := &cobra.Command{
		Use: "cancel ID", Short: "Cancel every unfinished job of a flow (running ones are signalled)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flowCall(cmd, cf, "POST", "/v1/flows/"+pathEscape(args[0])+"/cancel", nil)
		},
	}
	cmd.AddCommand(enqueue, get, cancel)
	return cmd
}

func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(name)
}

func flowCall(cmd *cobra.Command, cf *clientFlags, method, path string, body any) error {
	var f flow
	raw, err := cf.client().callJSON(cmd.Context(), method, path, body, &f)
	if err != nil {
		return err
	}
	if cf.json {
		printJSON(cmd.OutOrStdout(), raw)
		return nil
	}
	printFlow(cmd.OutOrStdout(), f)
	return nil
}
