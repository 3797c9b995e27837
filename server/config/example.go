package config

import _ "embed"

// Example is sluice.example.yaml: FastGPT's rate-limit scenes with their
// reference numbers. `sluice serve` uses it when no config file is given,
// so a fresh start has scenes to try.
//
//go:embed example.yaml
var Example []byte

// LoadExample parses Example.
func LoadExample() (*Config, error) { return Parse(Example, "built-in example") }
