package config_test

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/server/config"
)

// Parse reports every problem of a file with its line.
func ExampleParse() {
	_, err := config.Parse([]byte(`
server:
  listen: nowhere
limits:
  scenes:
    member:
      subject: [member]
      policies:
        export-usage: {limits: [{quota: 0, window: 60s}]}
`), "sluice.yaml")
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, p := range cerr.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// line 3: server.listen: must be host:port such as 127.0.0.1:8080, got "nowhere"
	// line 9: limits.scenes.member.policies.export-usage.limits[0].quota: must be a positive integer, got 0
}

// Values may come from the environment, so secrets stay out of the file.
func ExampleParseEnv() {
	env := map[string]string{"API_TOKEN": "0123456789abcdef-api"}
	cfg, err := config.ParseEnv([]byte(`
auth:
  tokens:
    - {name: api, token: "${API_TOKEN}", roles: [limiter]}
server:
  listen: "${LISTEN:-127.0.0.1:9090}"
`), "sluice.yaml", func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Server.Listen, cfg.Auth.Tokens[0].Name, len(cfg.Auth.Tokens[0].Token))
	// Output:
	// 127.0.0.1:9090 api 20
}
