package remote

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/store/storetest"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestSensorToCentral runs a sensor whose server is not there yet: its
// observations wait in the outbox, then reach the central in order once
// the embedded server starts, each appended once, resends included.
func TestSensorToCentral(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	addr := freePort(t)

	ob, err := OpenOutbox(filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	nc, err := Connect(ClientOptions{URL: "nats://" + addr, User: "sensor", Password: "pw", Name: "test-sensor"}, log)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := NewPublisher(nc, log)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var sentMu sync.Mutex
	sent := 0
	sn := &Sensor{Name: "a", Interval: time.Second, Outbox: ob, Publisher: pub, Log: log, Retry: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond,
		Sent: func(Entry) { sentMu.Lock(); sent++; sentMu.Unlock() }}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { sn.Run(ctx) })

	inst := sources.Instance{Source: "sweep:remote", Kind: "sweep"}
	var want []string
	for i := range 5 {
		start := time.Unix(1700000000+int64(i), 0)
		run := sources.Run{Instance: inst, Started: start, Finished: start.Add(time.Second),
			Result: &sources.Sweep{ScanID: "s" + string(rune('0'+i)), Started: start, Finished: start.Add(time.Second), Complete: true}}
		if err := sn.Record(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // a few failed passes
	entries, _ := ob.Peek(10)
	if len(entries) != 5 {
		t.Fatalf("outbox holds %d, want 5 while the server is down", len(entries))
	}
	for _, e := range entries {
		want = append(want, e.Event.ID)
	}
	// A resend of an entry already sent (a sensor killed between the
	// publish and the removal) must not append twice.
	if _, err := ob.Put("sweep", entries[0].Event); err != nil {
		t.Fatal(err)
	}

	srv, err := StartEmbedded(EmbeddedOptions{Listen: addr, User: "sensor", Password: "pw", StoreDir: filepath.Join(t.TempDir(), "nats"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	st := storetest.Open(t)
	var outMu sync.Mutex
	outcomes := map[string]int{}
	central := NewCentral(st, CentralOptions{Allowed: []string{"a"}, Log: log, Observe: func(o Outcome) {
		outMu.Lock()
		outcomes[o.Result]++
		outMu.Unlock()
	}})
	if err := central.Init(ctx); err != nil {
		t.Fatal(err)
	}
	cnc, err := srv.Conn("central", log)
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopCentral := context.WithCancel(ctx)
	var cwg sync.WaitGroup
	cwg.Go(func() {
		if err := central.Run(cctx, cnc); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for (st.Head() < 5 || ob.Len() > 0) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // let a duplicate arrive, if one would
	stopCentral()
	cwg.Wait()
	evs := logOf(t, st)
	if len(evs) != 5 {
		t.Fatalf("%d events in the log, want 5", len(evs))
	}
	for i, e := range evs {
		if e.ID != want[i] || e.Source != "sensor:a" || e.Kind != events.KindSweepCompleted {
			t.Errorf("event %d: %s %s %s, want %s from sensor:a in order", i, e.ID, e.Source, e.Kind, want[i])
		}
	}
	if ob.Len() != 0 {
		t.Errorf("outbox still holds %d", ob.Len())
	}
	outMu.Lock()
	defer outMu.Unlock()
	if outcomes["appended"] != 5 || outcomes["refused"]+outcomes["failed"] != 0 {
		t.Errorf("outcomes %v", outcomes)
	}
	if cts := central.Contacts(); cts[0].Last.IsZero() || cts[0].Interval != time.Second {
		t.Errorf("contact %+v", cts[0])
	}
}

// TestCentralRefusesForgedSubjects: a message must arrive on its
// sensor's own subject (so that server permissions can bind credentials
// to a name), and a malformed one (a header sent twice) is refused
// without stopping the central.
func TestCentralRefusesForgedSubjects(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv, err := StartEmbedded(EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: filepath.Join(t.TempDir(), "nats"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	st := storetest.Open(t)
	outcomes := make(chan Outcome, 10)
	central := NewCentral(st, CentralOptions{Allowed: []string{"a", "b"}, Log: log, Observe: func(o Outcome) { outcomes <- o }})
	if err := central.Init(ctx); err != nil {
		t.Fatal(err)
	}
	cnc, err := srv.Conn("central", log)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { central.Run(ctx, cnc) })

	nc, err := srv.Conn("sender", log)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(sensor, subject string, extra nats.Header) {
		t.Helper()
		m, err := Encode(Observation{Sensor: sensor, Kind: "sweep", Event: sweepEvent(t, sensor+subject, 0)})
		if err != nil {
			t.Fatal(err)
		}
		nm := nats.NewMsg(subject)
		nm.Data = m.Payload
		nm.Header.Set(wmnats.WatermillUUIDHdr, m.UUID)
		for k, v := range m.Metadata {
			nm.Header.Set(k, v)
		}
		for k, vs := range extra {
			for _, v := range vs {
				nm.Header.Add(k, v)
			}
		}
		for {
			_, err := js.PublishMsg(ctx, nm)
			if err == nil {
				return
			}
			if !errors.Is(err, jetstream.ErrNoStreamResponse) || ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the central has not created the stream yet
		}
	}
	tests := []struct {
		name, sensor, subject string
		extra                 nats.Header
		want                  string
	}{
		{"b's name on a's subject", "b", SubjectFor("a"), nil, "refused"},
		{"the sensor header twice", "a", SubjectFor("a"), nats.Header{HeaderSensor: {"b"}}, "appended"},
		{"a forged subject header", "b", SubjectFor("a"), nats.Header{HeaderSubject: {SubjectFor("b")}}, "refused"},
		{"b on its own subject", "b", SubjectFor("b"), nil, "appended"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			publish(tc.sensor, tc.subject, tc.extra)
			select {
			case o := <-outcomes:
				if o.Result != tc.want {
					t.Fatalf("%s, want %s", o.Result, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the central did not handle the message")
			}
		})
	}
	evs := logOf(t, st)
	if len(evs) != 2 || evs[0].Source != "sensor:a" || evs[1].Source != "sensor:b" {
		t.Fatalf("log: %+v", evs)
	}
}

// TestEmbeddedSensorUser: the sensors' user of the embedded server may
// publish on the sensors' subjects and nothing else: not delete or read
// the stream through JetStream's API. A wrong password is refused, and
// the central's own user name cannot be given to sensors.
func TestEmbeddedSensorUser(t *testing.T) {
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if _, err := StartEmbedded(EmbeddedOptions{Listen: "127.0.0.1:0", User: centralUser, Password: "x", StoreDir: t.TempDir(), Log: log}); err == nil {
		t.Fatal("the central's user name was accepted for sensors")
	}
	url, cjs := embeddedWithStream(t, EmbeddedOptions{User: "sensor", Password: "pw"})
	js := sensorJS(t, url, "sensor", "pw", "wrong")
	if _, err := js.Publish(ctx, SubjectFor("a"), []byte("{}")); err != nil {
		t.Fatalf("the sensor could not publish on its subject: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := js.DeleteStream(tctx, Topic); err == nil {
		t.Fatal("the sensor's user deleted the stream")
	}
	if _, err := js.Stream(tctx, Topic); err == nil {
		t.Fatal("the sensor's user read the stream's info")
	}
	st, err := cjs.Stream(ctx, Topic)
	if err != nil {
		t.Fatalf("the stream is gone: %v", err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream: %v, %+v", err, info)
	}
}

// TestEmbeddedPerSensorUsers: a sensor with its own password connects as
// the user of its name and may publish on its own subject only; a
// password does not open another sensor's user; names that would clash
// with the central's user or the shared one are refused.
func TestEmbeddedPerSensorUsers(t *testing.T) {
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	for name, o := range map[string]EmbeddedOptions{
		"the central's user":     {Sensors: map[string]string{centralUser: "x"}},
		"the shared user's name": {User: "a", Password: "p", Sensors: map[string]string{"a": "x"}},
		"an empty password":      {Sensors: map[string]string{"a": ""}},
		"a wildcard":             {Sensors: map[string]string{"a.*": "x"}},
	} {
		o.Listen, o.StoreDir, o.Log = "127.0.0.1:0", t.TempDir(), log
		if srv, err := StartEmbedded(o); err == nil {
			srv.Shutdown()
			t.Errorf("%s: accepted", name)
		}
	}
	url, cjs := embeddedWithStream(t, EmbeddedOptions{Sensors: map[string]string{"site-a": "pa", "site-b": "pb"}})
	js := sensorJS(t, url, "site-a", "pa", "pb") // site-b's password does not open site-a's user
	if _, err := js.Publish(ctx, SubjectFor("site-a"), []byte("{}")); err != nil {
		t.Fatalf("site-a could not publish on its subject: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := js.Publish(tctx, SubjectFor("site-b"), []byte("{}")); err == nil {
		t.Fatal("site-a published as site-b")
	}
	st, err := cjs.Stream(ctx, Topic)
	if err != nil {
		t.Fatalf("the stream is gone: %v", err)
	}
	if info, err := st.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream: %v, %+v (want site-a's one message)", err, info)
	}
}

// embeddedWithStream starts the embedded server with o (on loopback, its
// store in a temporary directory) and creates the stream as the central;
// it returns the sensors' URL and the central's JetStream.
func embeddedWithStream(t *testing.T, o EmbeddedOptions) (string, jetstream.JetStream) {
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	o.Listen, o.StoreDir, o.Log = "127.0.0.1:0", filepath.Join(t.TempDir(), "nats"), log
	srv, err := StartEmbedded(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	cnc, err := srv.Conn("central", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cnc.Close)
	cjs, err := jetstream.New(cnc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cjs.CreateOrUpdateStream(context.Background(), StreamConfig()); err != nil {
		t.Fatalf("the central could not create the stream: %v", err)
	}
	return "nats://" + srv.Addr().String(), cjs
}

// sensorJS connects to url as user with password, after checking that
// the wrong password is refused.
func sensorJS(t *testing.T, url, user, password, wrong string) jetstream.JetStream {
	t.Helper()
	if nc, err := nats.Connect(url, nats.UserInfo(user, wrong)); err == nil {
		nc.Close()
		t.Fatalf("user %s: a wrong password was accepted", user)
	}
	nc, err := nats.Connect(url, nats.UserInfo(user, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// A sensor whose password the server refuses keeps trying: once the
// password is fixed on the server's side (here: the server started again
// with it), the link comes up. The NATS client gives up for good after
// the same refusal twice unless told otherwise.
func TestRefusedLoginKeepsRetrying(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	start := func(listen, password string) *Embedded {
		t.Helper()
		srv, err := StartEmbedded(EmbeddedOptions{Listen: listen, StoreDir: filepath.Join(t.TempDir(), "nats"), Log: log,
			Sensors: map[string]string{"site-a": password}})
		if err != nil {
			t.Fatal(err)
		}
		return srv
	}
	srv := start("127.0.0.1:0", "old")
	addr := srv.Addr().String()
	nc, err := Connect(ClientOptions{URL: "nats://" + addr, User: "site-a", Password: "new", Name: "test"}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	time.Sleep(3500 * time.Millisecond) // several refusals
	if nc.IsConnected() {
		t.Fatal("connected with a refused password")
	}
	srv.Shutdown()
	srv = start(addr, "new")
	defer srv.Shutdown()
	for deadline := time.Now().Add(10 * time.Second); !nc.IsConnected(); time.Sleep(50 * time.Millisecond) {
		if nc.IsClosed() {
			t.Fatal("the client gave up after the refusals")
		}
		if time.Now().After(deadline) {
			t.Fatal("not connected 10 s after the password was fixed")
		}
	}
}
