package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/events/remote"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/store"
)

// envSensorBin passes the binary built outside the lab to the test re-run
// inside it.
const envSensorBin = "JOCASTA_TEST_SENSOR_BIN"

// linkProxy forwards TCP from its address to target; cut closes the
// listener and every connection (the site's link is down), restore
// listens again on the same address, and a delay holds every chunk in
// either direction that long (a slow link).
type linkProxy struct {
	addr, target string
	delay        atomic.Int64 // nanoseconds
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
	wg           sync.WaitGroup
}

// pipe copies from src to dst, holding each chunk for the link's delay.
func (p *linkProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(p.delay.Load()))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	p := &linkProxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *linkProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			p.wg.Go(func() { p.pipe(up, c) })
			p.wg.Go(func() { p.pipe(c, up) })
		}
	})
}

func (p *linkProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *linkProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy: listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// waitingRE finds a restarted sensor's note of what it found in its outbox.
var waitingRE = regexp.MustCompile(`"waiting":\d+[^\n]*from a previous run`)

var storedRE = regexp.MustCompile(`"observation":"([0-9a-f]{32})"[^\n]*"message":"observation stored"`)

// storedIDs are the observation ids a sensor's debug log says it stored
// in its outbox (on disk), in order.
func storedIDs(log string) []string {
	var out []string
	for _, m := range storedRE.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// sensorProc is `jocasta sensor` as a real process.
type sensorProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs strings.Builder
	done chan struct{}
}

func startSensorProc(t *testing.T, bin, cfg string) *sensorProc {
	t.Helper()
	p := &sensorProc{cmd: exec.Command(bin, "sensor", "--config", cfg), done: make(chan struct{})}
	stderr, _ := p.cmd.StderrPipe()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

func (p *sensorProc) log() string { p.mu.Lock(); defer p.mu.Unlock(); return p.logs.String() }

func (p *sensorProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	<-p.done
}

const sensorSweep = `scan:
  source: sweep:%s
  devices:
    interval: 3s
    wait: 1s
    resolve_mdns: false
    resolve_netbios: false
    resolve_dnssd: false
    resolve_ssdp: false
`

// TestLabSensors runs a central with an embedded NATS server and two
// sensors on the lab's segment with disjoint networks: site-a in-process
// behind a link that is cut for 15 s while it keeps sweeping (with the
// shared sensor user), site-b as the real binary, killed with SIGKILL
// while it sends and started again (with a password of its own).
// The central's inventory is what both saw; every observation a sensor
// stored is in the central's log exactly once; a sensor gone silent
// leaves its devices not covered, never offline.
func TestLabSensors(t *testing.T) {
	if testing.Short() && !inCI() {
		t.Skip("lab test: skipped with -short outside CI")
	}
	if os.Getenv(envSensorBin) == "" {
		if _, inside := lab.FromEnv(); !inside {
			t.Setenv(envSensorBin, buildBinary(t))
		}
	}
	l := lab.New(t, labSpec())
	if !l.InScanner(t) {
		return
	}
	bin := os.Getenv(envSensorBin)
	if bin == "" {
		t.Fatal("no sensor binary")
	}

	// The central: no sweeps of its own.
	natsAddr := make(chan string, 1)
	testHooks = &serveHooks{sensorsListening: func(a string) { natsAddr <- a }}
	t.Cleanup(func() { testHooks = nil })
	cdir := t.TempDir()
	ccfg := writeConfig(t, cdir, noSweeps+`inventory:
  online_window: 12s
sensors:
  enabled: true
  names: [site-a, site-b]
  nats:
    embedded:
      listen: 127.0.0.1:0
      user: sensor
      password: sensor-pw
      sensors:
        site-b: {password: site-b-pw}
`)
	d := startDaemon(t, ccfg)
	testHooks = nil
	var central string
	select {
	case central = <-natsAddr:
	case <-time.After(10 * time.Second):
		t.Fatalf("no embedded NATS address\n%s", d.log)
	}
	code, out, stderr := cli(t, "", "token", "create", "--config", ccfg, "--name", "lab", "--mode", "read", "--expires", "never")
	if code != 0 {
		t.Fatalf("token: %s", stderr)
	}
	tok := lastLine(out)
	if code, body := d.do(t, "GET", "/metrics", tok, "", ""); code != 200 || !strings.Contains(string(body), `jocasta_sensor_last_contact_seconds{sensor="site-a"}`) {
		t.Fatalf("metrics: %d\n%s", code, body)
	}

	// site-a, in-process, behind a link we can cut.
	proxy := newLinkProxy(t, central)
	adir := t.TempDir()
	acfgPath := writeConfig(t, adir, "networks: [10.78.0.0/29]\n"+fmt.Sprintf(sensorSweep, "site-a")+`sensor:
  name: site-a
  nats: {url: "nats://`+proxy.addr+`", user: sensor, password: sensor-pw}
`)
	acfg, err := config.Load(acfgPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	alog := &lockedBuffer{}
	actx, stopA := context.WithCancel(context.Background())
	aDone := make(chan struct{})
	var aErr error
	go func() {
		defer close(aDone)
		aErr = runSensor(actx, acfg, zerolog.New(alog).Level(zerolog.DebugLevel))
	}()
	t.Cleanup(func() { stopA(); <-aDone })

	// site-b, the real binary, with port scans, behind a link of its own.
	proxyB := newLinkProxy(t, central)
	bdir := t.TempDir()
	bcfg := writeConfig(t, bdir, "networks: [10.78.0.8/29]\n"+fmt.Sprintf(sensorSweep, "site-b")+`  ports:
    enabled: true
    interval: 5s
    custom: "22,80,445,631,9100"
sensor:
  name: site-b
  nats: {url: "nats://`+proxyB.addr+`", user: site-b, password: site-b-pw}
`)
	b1 := startSensorProc(t, bin, bcfg)

	// Cut both links for 15 s; the sweeps go on into the outboxes.
	if !eventually(60*time.Second, func() bool {
		return len(storedIDs(alog.String())) >= 2 && len(storedIDs(b1.log())) >= 2
	}) {
		t.Fatalf("the sensors stored nothing:\nsite-a:\n%s\nsite-b:\n%s", alog, b1.log())
	}
	proxy.cut()
	proxyB.cut()
	cutAt, bCutAt := len(storedIDs(alog.String())), len(storedIDs(b1.log()))
	time.Sleep(15 * time.Second)
	if n := len(storedIDs(alog.String())); n < cutAt+3 {
		t.Errorf("site-a stored %d observations during the cut, want its sweeps to go on", n-cutAt)
	}
	if n := len(storedIDs(b1.log())); n < bCutAt+3 {
		t.Errorf("site-b stored %d observations during the cut, want its sweeps to go on", n-bCutAt)
	}
	proxy.restore(t)

	// SIGKILL site-b while it sends its backlog: its link back but slow
	// (each publish waits about a second for its acknowledgement), killed
	// as soon as the central appended the first of the backlog. Those it
	// published in that pass are still in its outbox (removed only after
	// the pass), the others not yet sent: on its next start it sends
	// them again, and the central appends each once.
	appendedB := func() int {
		_, body := d.do(t, "GET", "/metrics", tok, "", "")
		m := regexp.MustCompile(`jocasta_sensor_messages_total\{sensor="site-b",result="appended"\} (\d+)`).FindSubmatch(body)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	before := appendedB()
	proxyB.delay.Store(int64(400 * time.Millisecond))
	proxyB.restore(t)
	deadline := time.Now().Add(60 * time.Second)
	for appendedB() == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	b1.kill(t)
	if appendedB() == before {
		t.Fatalf("site-b sent nothing after its link came back:\n%s", b1.log())
	}
	bStored := storedIDs(b1.log())
	proxyB.delay.Store(0)
	b2 := startSensorProc(t, bin, bcfg)
	if !eventually(20*time.Second, func() bool { return waitingRE.MatchString(b2.log()) }) {
		t.Errorf("site-b, started again, found nothing waiting in its outbox: it was not killed while sending:\n%s", b2.log())
	}

	// The central's inventory is what both sensors saw.
	mac := func(node string) string { return l.MAC(node).String() }
	want := map[string]labDevice{
		"10.78.0.2":  {mac: mac("scanner"), ports: []uint16{}},
		"10.78.0.3":  {mac: mac("dns"), ports: []uint16{}},
		"10.78.0.10": {mac: mac("printer"), ports: []uint16{80, 631}},
		"10.78.0.11": {mac: mac("nas"), names: map[string]string{"dns": "nas.lab"}, ports: []uint16{22, 445}},
		"10.78.0.12": {mac: mac("tv"), ports: []uint16{}},
		"10.78.0.13": {mac: "02:42:0a:4e:00:0d", random: true, names: map[string]string{"dns": "quiet.lab"}, ports: []uint16{22}},
		"10.78.0.14": {mac: mac("laptop"), ports: []uint16{}},
		"10.78.0.15": {mac: mac("mystery"), ports: []uint16{9100}},
	}
	wantSource := func(ip string) string {
		if ip == "10.78.0.2" || ip == "10.78.0.3" {
			return "sensor:site-a"
		}
		return "sensor:site-b"
	}
	devices := func() map[string]projections.Device {
		code, body := d.do(t, "GET", "/api/devices?limit=1000", tok, "", "")
		var page projections.Page[projections.Device]
		if code != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("devices: %d %s", code, body)
		}
		byIP := map[string]projections.Device{}
		for _, dev := range page.Items {
			for _, a := range dev.Addresses {
				if a.RetiredAt == nil {
					byIP[a.IP] = dev
				}
			}
		}
		return byIP
	}
	var last string
	if !eventually(60*time.Second, func() bool {
		got := map[string]labDevice{}
		for ip, dev := range devices() {
			g := labDevice{random: dev.MACRandom, ports: []uint16{}}
			if dev.MAC != nil {
				g.mac = *dev.MAC
			}
			for src, n := range dev.Names {
				if g.names == nil {
					g.names = map[string]string{}
				}
				g.names[src] = n.Name
			}
			for _, p := range dev.Ports {
				g.ports = append(g.ports, p.Port)
			}
			got[ip] = g
			if !slices.Equal(dev.Sources, []string{wantSource(ip)}) {
				last = fmt.Sprintf("%s sources %v, want [%s]", ip, dev.Sources, wantSource(ip))
				return false
			}
		}
		last = cmp.Diff(want, got, cmp.AllowUnexported(labDevice{}))
		return last == ""
	}) {
		t.Fatalf("the central's inventory never matched what the sensors saw (-want +got):\n%s\ncentral log:\n%s", last, d.log)
	}

	// Let site-a's backlog drain, then stop site-a; site-b is killed
	// again: it goes silent.
	if !eventually(30*time.Second, func() bool {
		return strings.Contains(alog.String(), "sending to the central again")
	}) {
		t.Fatalf("site-a never sent after the cut:\n%s", alog)
	}
	time.Sleep(3 * time.Second)
	stopA()
	<-aDone
	if aErr != nil {
		t.Fatalf("site-a: %v", aErr)
	}
	aStored := storedIDs(alog.String())
	b2.kill(t)
	bStored = append(bStored, storedIDs(b2.log())...)

	// Silent for 3 × 3 s: the central records site-b's sources as
	// failing; once the online window passes its devices are not
	// covered, and never offline.
	if !eventually(40*time.Second, func() bool {
		dev := devices()["10.78.0.11"]
		return dev.Coverage != nil && dev.Coverage.Source == "sensor:site-b" && strings.Contains(dev.Coverage.Reason, "silent")
	}) {
		t.Fatalf("site-b's devices never became not covered: %+v\n%s", devices()["10.78.0.11"], d.log)
	}
	for ip, dev := range devices() {
		if dev.Presence == projections.PresenceOffline {
			t.Errorf("%s went offline after its sensor went silent", ip)
		}
	}
	_, scans := d.do(t, "GET", "/api/scans?limit=50", tok, "", "")
	if !strings.Contains(string(scans), "sensor site-b silent: last contact") {
		t.Errorf("the scan log does not show site-b's silence and last contact:\n%s", scans)
	}
	_, metrics := d.do(t, "GET", "/metrics", tok, "", "")
	for _, m := range []string{`jocasta_sensor_silent{sensor="site-b"} 1`, `jocasta_sensor_messages_total{sensor="site-a",result="appended"}`} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
	// Each sensor's last contact: a recent Unix time.
	for _, name := range []string{"site-a", "site-b"} {
		m := regexp.MustCompile(`jocasta_sensor_last_contact_seconds\{sensor="` + name + `"\} (\S+)`).FindSubmatch(metrics)
		var at float64
		if m != nil {
			at, _ = strconv.ParseFloat(string(m[1]), 64)
		}
		if age := time.Since(time.Unix(int64(at), 0)); age < 0 || age > 2*time.Minute {
			t.Errorf("last contact of %s: %q, want within the last two minutes", name, m)
		}
	}

	// Every stored observation is in the central's log exactly once, or
	// still in its sensor's outbox (the last ones of a sensor stopped or
	// killed for good: they leave on its next start), and site-a's are in
	// the order it stored them.
	waiting := map[string]bool{}
	for _, dir := range []string{adir, bdir} {
		ob, err := remote.OpenOutbox(filepath.Join(dir, "data", "sensor-outbox.db"))
		if err != nil {
			t.Fatal(err)
		}
		left, err := ob.Peek(1 << 20)
		ob.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range left {
			waiting[e.Event.ID] = true
		}
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(cdir, "data", "jocasta.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := map[string]int{}
	bySensor := map[string][]string{}
	st.Scan(context.Background(), 1, func(e events.Envelope) error {
		count[e.ID]++
		if strings.HasPrefix(e.Source, "sensor:") && e.Kind != events.KindScanFailed || strings.Contains(e.Source, "/") {
			bySensor[e.Source] = append(bySensor[e.Source], e.ID)
		}
		return nil
	})
	for id, n := range count {
		if n > 1 {
			t.Errorf("observation %s appended %d times", id, n)
		}
	}
	for name, ids := range map[string][]string{"site-a": aStored, "site-b": bStored} {
		// What still waits is the newest: the outbox leaves in order.
		for i := 1; i < len(ids); i++ {
			if waiting[ids[i-1]] && !waiting[ids[i]] {
				t.Errorf("%s: observation %s still waits in the outbox, but the later %s was sent", name, ids[i-1], ids[i])
			}
		}
		for _, id := range ids {
			if count[id] != 1 && !(count[id] == 0 && waiting[id]) {
				t.Errorf("%s: stored observation %s is in the central's log %d times (in the outbox still: %v)", name, id, count[id], waiting[id])
			}
		}
	}
	gotA := bySensor["sensor:site-a"]
	if !sort.SliceIsSorted(gotA, func(i, j int) bool { return slices.Index(aStored, gotA[i]) < slices.Index(aStored, gotA[j]) }) {
		t.Errorf("site-a's observations were appended out of order")
	}
	t.Logf("site-a stored %d (%d during the cut), site-b stored %d (killed twice; after the first kill: %q); the central appended %d sensor events; %d wait in the outboxes",
		len(aStored), len(aStored)-cutAt, len(bStored), waitingRE.FindString(b2.log()), len(gotA)+len(bySensor["sensor:site-b"]), len(waiting))
}
