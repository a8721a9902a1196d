package main

import (
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/builtin"
)

// notRunYet is what serve warns about at start for plugins this build
// does not run: the registry's lines for the kinds without a source.
// Notification destinations are all sent to.
func notRunYet(t *testing.T, cfg *config.Config) []string {
	t.Helper()
	var kinds []sources.Kind
	for _, k := range builtin.Kinds() {
		if k.Build == nil {
			kinds = append(kinds, k)
		}
	}
	_, warnings, err := builtin.Build(kinds, sourceEnv(cfg, nil, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return warnings
}

func TestNotRunYet(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"nothing configured", "", nil},
		{"disabled instance, disabled destination",
			"plugins:\n  routerapi:\n    core: {host: h}\nnotify:\n  n:\n    enabled: false\n    push: {url: \"https://x/t\"}\n", nil},
		{"every kind enabled",
			"plugins:\n" +
				"  routerapi:\n    core: {enabled: true, host: h, ssl: true, password: S3CR3T}\n" +
				"  rpcrouter:\n    ap: {enabled: true, host: h}\n" +
				"  flowlistener:\n    f: {enabled: true, exporters: [192.0.2.1]}\n" +
				"  dnsnode:\n    b: {enabled: true, host: h}\n    a: {enabled: true, host: h}\n" +
				"  dnsfilter1:\n    x: {enabled: true, host: h}\n" +
				"  dnsfilter2:\n    y: {enabled: true, host: h}\n" +
				"notify:\n  phone:\n    push: {url: \"https://ntfy.example.com/S3CR3T\"}\n",
			nil}, // every kind of the contract runs in this build (the DNS plugins were the last)
		{"destinations are sent to",
			"notify:\n  phone:\n    push: {url: \"https://ntfy.example.com/S3CR3T\"}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, t.TempDir(), tt.yaml)
			cfg, err := config.Load(path, nil)
			if err != nil {
				t.Fatalf("load %s: %v", filepath.Base(path), err)
			}
			got := notRunYet(t, cfg)
			var prefixes []string
			for _, line := range got {
				if strings.Contains(line, "S3CR3T") || strings.Contains(line, "\n") {
					t.Errorf("line shows a secret or breaks: %q", line)
				}
				prefixes = append(prefixes, line[:strings.Index(line, " is enabled")+len(" is enabled")])
			}
			if diff := cmp.Diff(tt.want, prefixes); diff != "" {
				t.Errorf("notRunYet (-want +got):\n%s", diff)
			}
		})
	}
}

// A push destination without server.base_url: serve says at start that
// its messages will carry no link back to the device, and how to add one.
func TestPushWithoutBaseURLWarned(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		warned     bool
	}{
		{"no base_url", "notify:\n  phone:\n    push: {url: \"http://127.0.0.1:9/S3CR3T\"}\n", true},
		{"base_url set", "server:\n  base_url: http://jocasta.lan:8080\nnotify:\n  phone:\n    push: {url: \"http://127.0.0.1:9/S3CR3T\"}\n", false},
		{"a webhook only", "notify:\n  hook:\n    webhook: {url: \"http://127.0.0.1:9/in\", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, writeConfig(t, t.TempDir(), noSweeps+tc.yaml))
			d.stop()
			logs := d.log.String()
			if got := strings.Contains(logs, "set server.base_url"); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, logs)
			}
			if strings.Contains(logs, "S3CR3T") {
				t.Error("the log shows the push URL's secret path")
			}
		})
	}
}
