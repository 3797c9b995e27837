// Command flow runs a crawl → extract → summarise flow on an embedded
// SQLite queue: one crawl job fans out to an extract job per page, and a
// summarise job waits for every extract (a fan-in). Each handler reads
// its parents' results from the job it is given. It prints the flow as it
// ends.
//
//	go run ./examples/flow
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/queue/sqlitequeue"
)

func main() {
	dir, err := os.MkdirTemp("", "sluice-flow-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, filepath.Join(dir, "queue.db")); err != nil {
		log.Fatal(err)
	}
}

// pages are what the crawl finds; the flow has an extract node per page.
var pages = []string{"/", "/pricing", "/blog"}

// site is the flow: crawl first, then one extract per page, then one
// summarise that waits for them all.
func site() queue.FlowSpec {
	f := queue.FlowSpec{Name: "example.com", Nodes: []queue.FlowNode{
		{Name: "crawl", Job: queue.JobSpec{Queue: "web", Kind: "crawl", Payload: []byte(`"https://example.com"`)}},
		{Name: "summarise", Job: queue.JobSpec{Queue: "web", Kind: "summarise"}},
	}}
	for _, p := range pages {
		name := "extract " + p
		payload, _ := json.Marshal(p)
		f.Nodes = append(f.Nodes, queue.FlowNode{Name: name, Job: queue.JobSpec{Queue: "web", Kind: "extract", Payload: payload}})
		f.Edges = append(f.Edges, queue.FlowEdge{Parent: "crawl", Child: name}, queue.FlowEdge{Parent: name, Child: "summarise"})
	}
	return f
}

func run(ctx context.Context, out io.Writer, path string) error {
	b, err := sqlitequeue.Open(path, sqlitequeue.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	c := queue.NewClient(b)
	f, err := c.EnqueueFlow(ctx, site())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "enqueued flow %q: %d jobs, %s\n", f.Name, len(f.Jobs), states(f))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	w := queue.NewWorker(b, queue.WorkerConfig{Queues: []string{"web"}, Concurrency: 4,
		PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	w.Handle("crawl", queue.HandlerFunc(crawl))
	w.Handle("extract", queue.HandlerFunc(extract))
	w.Handle("summarise", queue.HandlerFunc(summarise))
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	sum := f.Job("summarise").ID
	for {
		j, err := c.Get(ctx, sum)
		if err != nil {
			return err
		}
		if j.State.Final() {
			fmt.Fprintf(out, "summary (%s): %s\n", j.State, j.Result)
			break
		}
		time.Sleep(10 * time.Millisecond) // a program polls; tests wait on conditions
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	if f, err = c.Flow(context.Background(), f.ID); err != nil {
		return err
	}
	fmt.Fprintf(out, "flow ended: %s\n", states(f))
	return nil
}

func crawl(_ context.Context, j *queue.Job) ([]byte, error) {
	return json.Marshal(map[string]any{"site": string(j.Payload), "pages": len(pages)})
}

// extract reads the crawl's result (its parent) and returns the page's
// word count.
func extract(_ context.Context, j *queue.Job) ([]byte, error) {
	var page string
	if err := json.Unmarshal(j.Payload, &page); err != nil {
		return nil, queue.Permanent(err)
	}
	if len(j.Parents) != 1 || j.Parents[0].FlowNode != "crawl" {
		return nil, queue.Permanent(fmt.Errorf("extract %s: want the crawl as parent, got %v", page, j.Parents))
	}
	return json.Marshal(map[string]any{"page": page, "words": 100 * len(page)})
}

// summarise reads every extract's result.
func summarise(_ context.Context, j *queue.Job) ([]byte, error) {
	total := 0
	var seen []string
	for _, p := range j.Parents {
		var r struct {
			Page  string `json:"page"`
			Words int    `json:"words"`
		}
		if err := json.Unmarshal(p.Result, &r); err != nil {
			return nil, queue.Permanent(err)
		}
		total += r.Words
		seen = append(seen, r.Page)
	}
	sort.Strings(seen)
	return []byte(fmt.Sprintf("%d pages (%s), %d words", len(seen), strings.Join(seen, " "), total)), nil
}

// states counts the flow's jobs by state, in a fixed order.
func states(f *queue.Flow) string {
	n := map[queue.State]int{}
	for _, j := range f.Jobs {
		n[j.State]++
	}
	var parts []string
	for _, s := range queue.States {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", s, n[s]))
		}
	}
	return strings.Join(parts, " ")
}
