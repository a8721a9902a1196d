package main

import (
	"strings"
	"testing"
)

// TestSensorRefusesToStart: `jocasta sensor` says what it lacks before it
// touches the network (no sweep is configured in any of these).
func TestSensorRefusesToStart(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"no sensor section", noSweeps, []string{"sensor.name: required", "sensor.nats.url: required"}},
		{"no url", noSweeps + "sensor: {name: site-a}\n", []string{"sensor.nats.url: required"}},
		{"bad url, not shown", noSweeps + "sensor: {name: site-a, nats: {url: 'http://u:hunter2@x'}}\n", []string{"sensor.nats.url", "nats://"}},
		{"nothing to run", noSweeps + "sensor: {name: site-a, nats: {url: 'nats://127.0.0.1:1'}}\n", []string{"nothing to run"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, t.TempDir(), tc.yaml)
			code, _, stderr := cli(t, "", "sensor", "--config", cfg)
			if code == 0 {
				t.Fatalf("exit 0, want a refusal")
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "hunter2") {
				t.Errorf("stderr shows a password:\n%s", stderr)
			}
		})
	}
}
