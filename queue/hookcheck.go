package queue

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// WebhookCheck is ClientConfig.CheckWebhook: it decides, before anything is
// stored, whether a webhook given with a job or a group may be stored, such
// as whether its URL's host is an address the deliveries may reach
// (queue/webhook's Guard.WebhookCheck). queue is the job's queue, or "" for
// a group's webhook. The webhook's form has been validated already.
//
// It returns nil to accept. To refuse, it returns the error of
// RefuseWebhook, which names a field of the webhook; the client puts it at
// the place of the webhook in the call's arguments (JobSpec.Webhook.URL,
// specs[2].JobSpec.Webhook.URL, nodes[1].JobSpec.Webhook.URL,
// Schedule.Job.Webhook.URL, GroupSpec.Webhook.URL). Any other error is
// returned as it is and nothing is stored.
type WebhookCheck func(ctx context.Context, w *Webhook, queue string) error

// RefuseWebhook returns the refusal of a WebhookCheck: field names the
// webhook's field ("URL", or "" for the webhook as a whole) and rule says
// why, as an *InvalidArgumentError's Rule does ("is refused: its host is a
// loopback address").
func RefuseWebhook(field, rule string) error {
	name := "Webhook"
	if field != "" {
		name += "." + field
	}
	return queuetype.InvalidArgument(Field("", name), "%s", rule)
}

// checkHook runs the client's WebhookCheck on w, if both are set; at
// places a field of the webhook ("Webhook.URL") among the call's
// arguments.
func (c *Client) checkHook(ctx context.Context, w *Webhook, q string, at func(name string) FieldPath) error {
	if w == nil || c.cfg.CheckWebhook == nil {
		return nil
	}
	err := c.cfg.CheckWebhook(ctx, w, q)
	var ia *InvalidArgumentError
	if err == nil || !errors.As(err, &ia) || ia.Path.Type != "" {
		return err
	}
	return queuetype.InvalidArgument(at(ia.Path.Name), "%s", ia.Rule)
}

// checkSpecHooks runs the WebhookCheck on the webhook of every spec; batch
// names the list the specs came in ("specs", "nodes"), which a single spec
// of Enqueue does not carry.
func (c *Client) checkSpecHooks(ctx context.Context, specs []JobSpec, batch string) error {
	for i := range specs {
		at := func(name string) FieldPath {
			p := Field("JobSpec", name)
			if batch != "" {
				p = p.At(batch, i)
			}
			return p
		}
		if err := c.checkHook(ctx, specs[i].Webhook, specs[i].Queue, at); err != nil {
			return err
		}
	}
	return nil
}
