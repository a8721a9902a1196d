package main

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events/remote"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources"
)

// TestServeReadsSensorsFromAnExistingServer: with sensors.nats.url set,
// serve runs no NATS server of its own but reads the sensors' stream
// from that one (here a nats-server with JetStream and two users on
// 127.0.0.1), creating the stream itself; a sensor's sweep becomes
// devices with source sensor:<name>, and a name not allowed is refused.
func TestServeReadsSensorsFromAnExistingServer(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, NoSigs: true,
		StoreDir: filepath.Join(t.TempDir(), "js"),
		Users:    []*server.User{{Username: "central", Password: "central-pw"}, {Username: "sensor", Password: "sensor-pw"}}})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	url := "nats://" + ns.Addr().String()

	listening := make(chan string, 1)
	testHooks = &serveHooks{sensorsListening: func(a string) { listening <- a }}
	t.Cleanup(func() { testHooks = nil })
	cfg := writeConfig(t, t.TempDir(), noSweeps+`sensors:
  enabled: true
  names: [site-x]
  nats: {url: "`+url+`", user: central, password: central-pw}
`)
	d := startDaemon(t, cfg)
	testHooks = nil
	if a := <-listening; a != "" {
		t.Fatalf("serve runs an embedded server on %s, want none with sensors.nats.url set", a)
	}
	code, out, stderr := cli(t, "", "token", "create", "--config", cfg, "--name", "t", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)

	// Two sensors publish a sweep each: site-x, allowed, and site-y, not.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	for i, name := range []string{"site-x", "site-y"} {
		ob, err := remote.OpenOutbox(filepath.Join(t.TempDir(), "outbox.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer ob.Close()
		nc, err := remote.Connect(remote.ClientOptions{URL: url, User: "sensor", Password: "sensor-pw", Name: name}, log)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := remote.NewPublisher(nc, log)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		sn := &remote.Sensor{Name: name, Interval: time.Minute, Outbox: ob, Publisher: pub, Log: log, Retry: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond}
		wg.Go(func() { sn.Run(ctx) })
		now := time.Now()
		net4 := netip.MustParsePrefix("10.99.0.0/24")
		ip := netip.AddrFrom4([4]byte{10, 99, 0, byte(10 + i)})
		run := sources.Run{Instance: sources.Instance{Source: "sweep:" + name, Kind: "sweep"}, Started: now.Add(-time.Second), Finished: now,
			Result: &sources.Sweep{ScanID: "s-" + name, Started: now.Add(-time.Second), Finished: now, Complete: true, Networks: []netip.Prefix{net4},
				Hosts: []*sources.Host{{IP: ip, Network: net4, MAC: net.HardwareAddr{2, 0, 0, 0, 0, byte(i)}, Via: sources.ViaARP}}}}
		if err := sn.Record(ctx, run); err != nil {
			t.Fatal(err)
		}
	}

	var devs projections.Page[projections.Device]
	if !eventually(30*time.Second, func() bool {
		code, body := d.do(t, "GET", "/api/devices?limit=100", tok, "", "")
		return code == 200 && json.Unmarshal(body, &devs) == nil && len(devs.Items) > 0
	}) {
		t.Fatalf("no device from the sensor\n%s", d.log)
	}
	if !eventually(10*time.Second, func() bool {
		_, body := d.do(t, "GET", "/metrics", tok, "", "")
		return strings.Contains(string(body), `jocasta_sensor_messages_total{sensor="(not allowed)",result="refused"} 1`)
	}) {
		t.Errorf("site-y's message was not counted as refused")
	}
	code, body := d.do(t, "GET", "/api/devices?limit=100", tok, "", "")
	if code != 200 || json.Unmarshal(body, &devs) != nil {
		t.Fatalf("devices: %d %s", code, body)
	}
	if len(devs.Items) != 1 || devs.Items[0].Addresses[0].IP != "10.99.0.10" || len(devs.Items[0].Sources) != 1 || devs.Items[0].Sources[0] != "sensor:site-x" {
		t.Fatalf("devices: %+v, want only 10.99.0.10 from sensor:site-x", devs.Items)
	}
	if !strings.Contains(d.log.String(), `not in sensors.names`) {
		t.Errorf("the refusal of site-y was not logged:\n%s", d.log)
	}
}
