package backend

import (
	"encoding/json"

	"github.com/sluicehq/sluice/queue/queuetype"
)

// EncodeWebhook returns w's stored form (JSON), or "" for nil: for
// backends, which keep it as an opaque string.
func EncodeWebhook(w *queuetype.Webhook) string {
	if w == nil {
		return ""
	}
	b, err := json.Marshal(w)
	if err != nil { // a validated Webhook always encodes
		return ""
	}
	return string(b)
}

// DecodeWebhook reads what EncodeWebhook stored; "" is nil.
func DecodeWebhook(s string) (*queuetype.Webhook, error) {
	if s == "" {
		return nil, nil
	}
	var w queuetype.Webhook
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, err
	}
	return &w, nil
}
