package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

const envFileUsage = "`FILE` of KEY=VALUE lines (the targets' secrets) read over the environment, as systemd's EnvironmentFile"

// withEnvFile is env with the variables of file over it; file "" adds
// none. The file holds KEY=VALUE lines as systemd's EnvironmentFile does:
// blank lines and lines starting with # or ; are skipped, a value may be
// quoted with " or '. Errors name the line, never a value.
func withEnvFile(env func(string) string, file string) (func(string) string, error) {
	if file == "" {
		return env, nil
	}
	vars, err := readEnvFile(file)
	if err != nil {
		return nil, err
	}
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env(k)
	}, nil
}

func readEnvFile(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	vars := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		key = strings.TrimSpace(key)
		if !ok || !envKey.MatchString(key) {
			return nil, fmt.Errorf("env file %s, line %d: not KEY=VALUE", file, i+1)
		}
		value = strings.TrimSpace(value)
		if n := len(value); n >= 2 && (value[0] == '"' || value[0] == '\'') && value[n-1] == value[0] {
			value = value[1 : n-1]
		}
		vars[key] = value
	}
	return vars, nil
}

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
