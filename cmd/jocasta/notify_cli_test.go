package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections/notify"
)

func TestNotifyCLI(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rcv := newHookReceiver(t, secret)
	cfg := writeConfig(t, t.TempDir(), noSweeps+"notify:\n  hook:\n    webhook:\n      url: "+rcv.URL+"/in?token=S3CR3T\n      secret: "+secret+"\n"+
		"  off:\n    enabled: false\n    webhook:\n      url: "+rcv.URL+"/off\n      secret: "+secret+"\n")
	seed(t, cfg, sweepAt(time.Now().UTC().Add(-time.Minute), hostSpec{"10.9.0.10", "00:1b:63:00:00:01", "alpha.lab"}))

	code, out, errOut := cli(t, "", "notify", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "device.discovered@all device.online,device.quiet@watched (default)") {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "", "notify", "set", "--config", cfg, "hook", "device.discovered,device.offline@all", "device.online@network=10.9.0.0/24")
	if code != 0 || !strings.Contains(out, "device.online@network=10.9.0.0/24") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	code, out, _ = cli(t, "", "notify", "list", "--json", "--config", cfg)
	var views []notify.View
	if code != 0 || json.Unmarshal([]byte(out), &views) != nil || len(views) != 2 || views[0].Default || len(views[0].Rules) != 2 ||
		views[0].RulesSetBy == nil || !strings.HasPrefix(*views[0].RulesSetBy, "cli") {
		t.Fatalf("list --json: %d %s", code, out)
	}
	if strings.Contains(out, "S3CR3T") || strings.Contains(out, "/in") {
		t.Errorf("list shows the URL's path or query: %s", out)
	}
	code, out, errOut = cli(t, "", "notify", "test", "--config", cfg, "hook")
	if code != 0 || rcv.distinct() != 1 {
		t.Fatalf("test: %d %q %q (%d received)", code, out, errOut, rcv.distinct())
	}
	code, out, _ = cli(t, "", "notify", "ledger", "--config", cfg, "hook")
	if code != 0 || !strings.HasPrefix(out, "ID") {
		t.Fatalf("ledger: %d %q", code, out)
	}

	bad := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown kind", []string{"set", "hook", "device.exploded@all"}, 1, "not a change kind"},
		{"rule without scope", []string{"set", "hook", "device.online"}, 2, "KINDS@SCOPE"},
		{"host bits", []string{"set", "hook", "device.online@network=10.9.0.1/24"}, 1, "host bits"},
		{"unknown destination", []string{"test", "pager"}, 1, "no destination notify.pager"},
		{"unknown record", []string{"redeliver", "hook", "nope"}, 1, "no ledger record"},
		{"test of a disabled destination", []string{"test", "off"}, 1, "notify.off has enabled: false"},
		{"redelivery to a disabled destination", []string{"redeliver", "--all", "off"}, 1, "set notify.off.enabled to true"},
		{"bad state", []string{"ledger", "hook", "--state", "lost"}, 2, "--state"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"notify"}, tt.args[0], "--config", cfg)
			args = append(args, tt.args[1:]...)
			code, out, errOut := cli(t, "", args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want %d and %q", code, errOut, out, tt.code, tt.want)
			}
		})
	}
}
