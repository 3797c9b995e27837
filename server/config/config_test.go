package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/ratelimit"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestExampleIsValidAndMatchesRepoFile(t *testing.T) {
	t.Parallel()
	cfg, err := LoadExample()
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	root, err := os.ReadFile("../../sluice.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(root, Example) {
		t.Fatal("server/config/example.yaml differs from sluice.example.yaml: copy one over the other")
	}
	want := map[string][]string{
		"ip": {"ip"}, "account-verification": {"purpose", "account"}, "enterprise-auth": {"team"},
		"out-link": {"out-link", "uid"}, "upload": {"identity"}, "member": {"member"}, "team": {"team"},
	}
	if len(cfg.Limits.Scenes) != len(want) {
		t.Fatalf("scenes = %d, want %d", len(cfg.Limits.Scenes), len(want))
	}
	for name, subject := range want {
		got := cfg.Limits.Scenes[name].Subject
		if strings.Join(got, ",") != strings.Join(subject, ",") {
			t.Errorf("scene %s subject = %v, want %v", name, got, subject)
		}
	}
	// FastGPT's member table: 12 policies, exactly one limit each.
	member := cfg.Limits.Scenes["member"].Policies
	if len(member) != 12 {
		t.Errorf("member policies = %d, want 12", len(member))
	}
	for name, p := range member {
		if len(p.Limits) != 1 {
			t.Errorf("member/%s has %d limits, want 1", name, len(p.Limits))
		}
	}
	if got := member["check-pay-result"].Limits[0].Limit(); got != ratelimit.Per(60, time.Minute) {
		t.Errorf("check-pay-result = %v", got)
	}
	if got := cfg.Limits.Scenes["enterprise-auth"].Policies["verify-amount"].Limits[0].Limit(); got != ratelimit.Per(3, time.Minute) {
		t.Errorf("verify-amount = %v", got)
	}
	if cfg.Limits.Scenes["team"].FailureMode != "closed" {
		t.Error("team must fail closed")
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{"empty": "", "comment": "# nothing\n", "empty map": "{}\n"} {
		cfg, err := Parse([]byte(data), "x.yaml")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := Default()
		if cfg.Server != d.Server || cfg.Storage != d.Storage || cfg.Queues.Retention != d.Queues.Retention {
			t.Errorf("%s: got %+v, want defaults %+v", name, cfg, d)
		}
		if cfg.Server.Listen != "127.0.0.1:8080" || cfg.Storage.DataDir != "./sluice-data" || cfg.Server.MaxBodyBytes != 1<<20 {
			t.Errorf("%s: defaults = %+v", name, cfg.Server)
		}
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	doc := `
server:
  listen: 0.0.0.0:9000
  grpc: 127.0.0.1:8081
  log_format: json
storage:
  redis_url: ${REDIS_URL}
auth:
  tokens:
    - {name: ops, token: "${TOKEN}", roles: [admin, worker]}
limits:
  timeout: 250ms
  scenes:
    api:
      subject: [tenant, user]
      shadow: true
      policies:
        call:
          failure_mode: closed
          shadow: false
          limits:
            - {quota: 5, window: 1s}
            - {quota: 100, window: 1h, algorithm: token-bucket, burst: 10}
queues:
  retention: {completed: 1h, failed: -1s}
  tenants:
    overrides: {acme: {concurrency: "${ACME_CONC:-7}"}}
`
	cfg, err := ParseEnv([]byte(doc), "x.yaml", env(map[string]string{"REDIS_URL": "redis://127.0.0.1:6379/3", "TOKEN": "0123456789abcdef0123"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Storage.RedisURL != "redis://127.0.0.1:6379/3" || cfg.Auth.Tokens[0].Token != "0123456789abcdef0123" {
		t.Errorf("env not expanded: %+v %+v", cfg.Storage, cfg.Auth.Tokens)
	}
	if got := cfg.Queues.Tenants.Overrides["acme"].Concurrency; got != 7 {
		t.Errorf("default from ${ACME_CONC:-7} = %d, want 7", got)
	}
	pol := cfg.Limits.Scenes["api"].Policies["call"]
	if *pol.Shadow || pol.FailureMode != "closed" {
		t.Errorf("policy overrides = %+v", pol)
	}
	want := ratelimit.Limit{Quota: 100, Window: time.Hour, Algorithm: ratelimit.TokenBucket, Burst: 10}
	if got := pol.Limits[1].Limit(); got != want {
		t.Errorf("limit = %+v, want %+v", got, want)
	}
	if cfg.Limits.Timeout.D() != 250*time.Millisecond || cfg.Queues.Retention.Failed.D() != -time.Second {
		t.Errorf("durations: %v %v", cfg.Limits.Timeout, cfg.Queues.Retention.Failed)
	}
}

func TestErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	doc := "server:\n  listen: nowhere\n  colour: blue\nlimits:\n  scenes:\n    s:\n      subject: [x]\n      policies:\n        p: {limits: [{quota: 0, window: 1s}]}\n"
	_, err := Parse([]byte(doc), "sluice.yaml")
	var cerr *Error
	if !errors.As(err, &cerr) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want *Error", err)
	}
	want := `config: sluice.yaml: 3 problems:
  line 2: server.listen: must be host:port such as 127.0.0.1:8080, got "nowhere"
  line 3: server.colour: unknown field "colour" (known: grpc, listen, log_format, log_level, max_body_bytes, shutdown_timeout)
  line 9: limits.scenes.s.policies.p.limits[0].quota: must be a positive integer, got 0`
	if err.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", err, want)
	}
}

func TestValidateAfterChanges(t *testing.T) {
	t.Parallel()
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cfg.Storage.RedisMode = "ring"
	cfg.Server.LogFormat = "xml"
	err := cfg.Validate()
	want := `config: 2 problems:
  server.log_format: must be "text" or "json", got "xml"
  storage.redis_mode: must be "single", "cluster" or "sentinel", got "ring"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestWebhookAllowedPrefixes(t *testing.T) {
	t.Parallel()
	w := Webhooks{AllowNetworks: []string{"127.0.0.1", "10.20.3.4/16", "::1"}}
	got := fmt.Sprint(w.AllowedPrefixes())
	if want := "[127.0.0.1/32 10.20.0.0/16 ::1/128]"; got != want {
		t.Errorf("AllowedPrefixes = %s, want %s", got, want)
	}
}
