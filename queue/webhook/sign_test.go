package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/queue/webhook"
)

func TestSignMatchesTheDocumentedScheme(t *testing.T) {
	t.Parallel()
	at := time.Unix(1767225600, 0)
	body := []byte(`{"id":"evt_1"}`)
	m := hmac.New(sha256.New, []byte("k"))
	m.Write([]byte("1767225600." + string(body)))
	want := "t=1767225600,v1=" + hex.EncodeToString(m.Sum(nil))
	if got := webhook.Sign("k", at, body); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1767225600, 0)
	body := []byte(`{"id":"evt_1","type":"job.completed"}`)
	good := webhook.Sign("secret", now, body)
	other := webhook.Sign("old-secret", now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	cases := []struct {
		name      string
		secret    string
		header    string
		body      []byte
		tolerance time.Duration
		now       time.Time
		want      error
	}{
		{"valid", "secret", good, body, time.Minute, now, nil},
		{"valid a little later", "secret", good, body, time.Minute, now.Add(59 * time.Second), nil},
		{"clock a little behind", "secret", good, body, time.Minute, now.Add(-59 * time.Second), nil},
		{"default tolerance", "secret", good, body, 0, now.Add(4 * time.Minute), nil},
		{"rotation: any v1 may match", "secret", other + ",v1=" + good[len("t=")+len(ts)+len(",v1="):], body, time.Minute, now, nil},
		{"spaces and unknown keys", "secret", " " + good[:len(ts)+2] + ", v0=ab, " + good[len(ts)+3:], body, time.Minute, now, nil},
		{"tampered body", "secret", good, []byte(`{"id":"evt_2","type":"job.completed"}`), time.Minute, now, webhook.ErrSignatureMismatch},
		{"wrong secret", "nope", good, body, time.Minute, now, webhook.ErrSignatureMismatch},
		{"tampered timestamp", "secret", "t=" + strconv.FormatInt(now.Unix()+1, 10) + good[len(ts)+2:], body, time.Minute, now, webhook.ErrSignatureMismatch},
		{"replayed later", "secret", good, body, time.Minute, now.Add(61 * time.Second), webhook.ErrSignatureExpired},
		{"default tolerance passed", "secret", good, body, 0, now.Add(6 * time.Minute), webhook.ErrSignatureExpired},
		{"from the future", "secret", good, body, time.Minute, now.Add(-2 * time.Minute), webhook.ErrSignatureExpired},
		{"empty header", "secret", "", body, time.Minute, now, webhook.ErrSignatureMissing},
		{"no v1", "secret", "t=" + ts, body, time.Minute, now, webhook.ErrSignatureMissing},
		{"no t", "secret", good[len(ts)+3:], body, time.Minute, now, webhook.ErrSignatureMissing},
		{"bad t", "secret", "t=yesterday" + good[len(ts)+2:], body, time.Minute, now, webhook.ErrSignatureMissing},
		{"bad hex", "secret", "t=" + ts + ",v1=zz", body, time.Minute, now, webhook.ErrSignatureMismatch},
	}
	for _, c := range cases {
		err := webhook.Verify(c.secret, c.header, c.body, c.tolerance, c.now)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: Verify = %v, want %v", c.name, err, c.want)
		}
		if err != nil && !errors.Is(err, webhook.ErrSignature) {
			t.Errorf("%s: %v does not match ErrSignature", c.name, err)
		}
	}
}
