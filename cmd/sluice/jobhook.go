package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"
)

// hookFlags give a job its own webhook on the command line.
type hookFlags struct {
	url, metadata string
	events        []string
}

func (h *hookFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.url, "webhook", "", "URL that receives the job's events (signed; see docs/webhooks.md)")
	fl.StringVar(&h.metadata, "webhook-metadata", "", "JSON value sent back in every webhook payload")
	fl.StringSliceVar(&h.events, "webhook-event", nil, "event the webhook wants, repeatable (default: job.completed, job.failed, job.cancelled)")
}

// add puts the webhook into spec s, when --webhook is given.
func (h *hookFlags) add(s map[string]any) error {
	if h.url == "" {
		if h.metadata != "" || len(h.events) > 0 {
			return fmt.Errorf("--webhook-metadata and --webhook-event need --webhook")
		}
		return nil
	}
	w := map[string]any{"url": h.url}
	if h.metadata != "" {
		if !json.Valid([]byte(h.metadata)) {
			return fmt.Errorf("--webhook-metadata must be JSON, such as '{\"crawl\":\"c-1\"}'")
		}
		w["metadata"] = json.RawMessage(h.metadata)
	}
	if len(h.events) > 0 {
		w["events"] = h.events
	}
	s["webhook"] = w
	return nil
}
