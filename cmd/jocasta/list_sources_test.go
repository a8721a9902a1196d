package main

import (
	"strings"
	"testing"
)

func TestListSources(t *testing.T) {
	// --config, which every command takes, is accepted (and not needed).
	code, out, _ := cli(t, "", "list-sources", "--config", "/nonexistent/j.yaml")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"sweep ", "portscan ", "routerapi ", "flowlistener  listener", "dnsnode ", "dnsfilter1 ", "dnsfilter2 "} {
		if !strings.Contains(out, want) {
			t.Errorf("list-sources lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 8 {
		t.Errorf("%d kinds listed, want 8", n)
	}
}
