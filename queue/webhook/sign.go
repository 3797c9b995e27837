package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries t=<unix seconds>,v1=<hex HMAC-SHA256>.
	SignatureHeader = "Sluice-Signature"
	// EventIDHeader carries the event id: the same in every delivery of
	// the event, to every subscription and webhook that wants it.
	EventIDHeader = "Sluice-Event-Id"
	// DeliveryIDHeader carries the delivery id (DeliveryID), the
	// receiver's idempotency key, also sent as Idempotency-Key: one per
	// event and subscription, the same on every attempt.
	DeliveryIDHeader = "Sluice-Delivery-Id"
	// EventTypeHeader carries the event type.
	EventTypeHeader = "Sluice-Event-Type"
	// AttemptHeader carries the attempt number, from 1.
	AttemptHeader = "Sluice-Delivery-Attempt"
)

// DeliveryID identifies the delivery of event eventID to subscription
// sub (a configured subscription's name, JobHookName or GroupHookName):
// "<event id>:<subscription>", such as "evt_3f2a…:billing" or
// "evt_3f2a…:@group". Two deliveries of one event never share it (a job's
// webhook and its group's receive the same event); every attempt of one
// delivery carries it. A receiver deduplicates by it, not by the event id.
func DeliveryID(eventID, sub string) string { return eventID + ":" + sub }

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock when Verify is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// Errors returned by Verify; all match ErrSignature.
var (
	// ErrSignature is matched (errors.Is) by every Verify error.
	ErrSignature = errors.New("webhook: bad signature")
	// ErrSignatureMissing: no header, or one without t= and v1=.
	ErrSignatureMissing = &signatureError{"webhook: signature header missing or malformed"}
	// ErrSignatureMismatch: no v1 value is the HMAC of the timestamp and
	// body under the secret (wrong secret or altered body).
	ErrSignatureMismatch = &signatureError{"webhook: signature does not match the body"}
	// ErrSignatureExpired: the timestamp is outside the tolerance, as a
	// replayed request's would be.
	ErrSignatureExpired = &signatureError{"webhook: signature timestamp outside the tolerance"}
)

type signatureError struct{ msg string }

func (e *signatureError) Error() string        { return e.msg }
func (e *signatureError) Is(target error) bool { return target == ErrSignature }

// Sign returns the Sluice-Signature header value for body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<unix seconds>.<body>")>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a Sluice-Signature header against the raw request body:
// one of its v1 values must be the HMAC-SHA256 of "<t>.<body>" under
// secret (compared in constant time), and t must be within tolerance of
// now, before or after (DefaultTolerance when tolerance <= 0). It returns
// nil or one of ErrSignatureMissing, ErrSignatureMismatch and
// ErrSignatureExpired. Pass the body exactly as received, before any JSON
// decoding. Verify does not remember deliveries: to reject a replay within
// the tolerance, also reject an Idempotency-Key (Sluice-Delivery-Id)
// already processed.
func Verify(secret, header string, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	ts, sigs := parseSignature(header)
	if ts == "" || len(sigs) == 0 {
		return ErrSignatureMissing
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrSignatureMissing
	}
	want := mac(secret, ts, body)
	ok := false
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		if err == nil && hmac.Equal(got, want) {
			ok = true
		}
	}
	if !ok {
		return ErrSignatureMismatch
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrSignatureExpired
	}
	return nil
}

// parseSignature splits "t=…,v1=…[,v1=…]" into the timestamp and the v1
// values; unknown keys are skipped so that later schemes can be added.
func parseSignature(h string) (ts string, sigs []string) {
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
		case k == "t":
			ts = v
		case k == "v1":
			sigs = append(sigs, v)
		}
	}
	return ts, sigs
}
