package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
)

// typedOnly hides the DeviceJSONReader methods of an inventory, so the
// API takes the typed path (encoding/json of the views).
type typedOnly struct{ httpapi.Inventory }

// realInventory builds an inventory.Inventory over a bbolt file with n
// devices that use every part of the device view: names with characters
// JSON escapes, UPnP, DNS-SD services, open ports, retired addresses,
// edits, watches, offline devices and MAC-less ones.
func realInventory(t testing.TB, n int) *inventory.Inventory {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "inv.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	vendor := func(mac net.HardwareAddr) string {
		if len(mac) > 0 && mac[0] == 0 {
			return "Acme <Printers> & Co"
		}
		return ""
	}
	inv, err := inventory.New(inventory.Options{Vendor: vendor})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range inv.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return inv.Load(tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	var seq uint64
	apply := func(kind string, payload any, at time.Time, source, actor, device string) {
		t.Helper()
		ev := events.MustNew(kind, payload, at)
		seq++
		ev.Seq, ev.ID = seq, fmt.Sprintf("%032x", seq)
		ev.Source, ev.Actor, ev.Device = source, actor, device
		err := db.Update(func(tx *bolt.Tx) error {
			if err := inv.Apply(tx, ev); err != nil {
				return err
			}
			return inv.Flush(tx)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	sweep := func(at time.Time, hosts []events.SweepHost) {
		apply(events.KindSweepCompleted, events.SweepCompleted{ScanID: "s" + at.Format("150405"),
			Started: at.Add(-10 * time.Second), Finished: at, Networks: []string{"10.0.0.0/8"}, ProbesSent: 100,
			Complete: true, Hosts: hosts}, at, "sweep:lab", "", "")
	}
	var hosts []events.SweepHost
	for k := range n {
		h := events.SweepHost{IP: fmt.Sprintf("10.0.%d.%d", k/250, k%250+1), Network: "10.0.0.0/8", Via: "icmp",
			MAC: fmt.Sprintf("00:11:22:00:%02x:%02x", k>>8, k&0xff)}
		switch k % 4 {
		case 1:
			h.MAC = fmt.Sprintf("3e:22:fb:00:%02x:%02x", k>>8, k&0xff)
		case 2:
			h.MAC = ""
		}
		if k%3 == 0 {
			h.Names = events.NamesOf(map[string]string{"dns": fmt.Sprintf("h%d.lab", k), "mdns": fmt.Sprintf("H%d <b>&amp;\"Ü\u2028\x7f", k)})
		}
		if k%5 == 0 {
			h.UPnP = &events.UPnP{FriendlyName: fmt.Sprintf("TV %d\t'<>'", k), Manufacturer: "Sämsung & co"}
			h.Services = []events.Service{{Instance: fmt.Sprintf("TV %d", k), Type: "_airplay._tcp", Port: 7000}}
		}
		hosts = append(hosts, h)
	}
	sweep(t0, hosts)
	var res []events.PortResult
	for k := 0; k < n; k += 7 {
		res = append(res, events.PortResult{IP: hosts[k].IP, Open: []uint16{22, 7000, 8080}})
	}
	apply(events.KindPortScanCompleted, events.PortScanCompleted{ScanID: "p1", Started: t0.Add(time.Minute),
		Finished: t0.Add(2 * time.Minute), Ports: "22,8080", Targets: len(res), Complete: true, Results: res},
		t0.Add(2*time.Minute), "ports:lab", "", "")
	var moved []events.SweepHost
	for k := 0; k < n; k += 3 {
		if h := hosts[k]; h.MAC != "" {
			h.IP = fmt.Sprintf("10.1.%d.%d", k/250, k%250+1)
			moved = append(moved, h)
		}
	}
	sweep(t0.Add(7*time.Hour), moved) // moves some, the others go offline
	page, err := inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: inventory.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for k, d := range page.Items {
		at := t0.Add(8 * time.Hour)
		switch k % 4 {
		case 0:
			label, notes := fmt.Sprintf("Label «%d» </script>", k), "line one\nline two\ttabbed\r\n"
			apply(events.KindDeviceEdited, events.DeviceEdited{Label: &label, Notes: &notes}, at, "api", "alice <admin>", d.ID)
		case 1:
			group, typ := fmt.Sprintf("g%d", k%3), "printer"
			apply(events.KindDeviceEdited, events.DeviceEdited{Group: &group, Type: &typ}, at, "api", "alice", d.ID)
		}
		if k%6 == 0 {
			apply(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: true}, at, "api", "bob", d.ID)
		}
	}
	return inv
}

// TestRawDeviceJSON: answers built from the inventory's encoded devices
// are byte for byte the answers of the typed path, for pages of every
// sort and filter, every device, and errors; every answer is also
// checked against openapi.yaml.
func TestRawDeviceJSON(t *testing.T) {
	inv := realInventory(t, 150)
	if _, ok := httpapi.Inventory(inv).(httpapi.DeviceJSONReader); !ok {
		t.Fatal("inventory.Inventory does not implement httpapi.DeviceJSONReader")
	}
	handler := func(i httpapi.Inventory) http.Handler {
		h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{
			Inventory: i, Scans: &fakeInventory{}, // the scan log is not asked here
			Commander: &fakeCommander{}, Auth: &fakeAuth{}, Ready: &fakeReady{ready: true},
			Log: zerolog.New(io.Discard),
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	raw, typed := handler(inv), handler(typedOnly{inv})
	get := func(h http.Handler, method, target string) (*http.Response, []byte) {
		req := httptest.NewRequest(method, target, nil)
		req.Header.Set("Authorization", "Bearer "+tokRead)
		req.Header.Set("X-Request-Id", "same-id")
		return validator.Do(t, h, req)
	}
	// compare fetches target from both and returns the body.
	compare := func(t *testing.T, target string) []byte {
		t.Helper()
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			r1, b1 := get(raw, method, target)
			r2, b2 := get(typed, method, target)
			if r1.StatusCode != r2.StatusCode || !bytes.Equal(b1, b2) {
				t.Fatalf("%s %s:\nraw   %d %s\ntyped %d %s", method, target, r1.StatusCode, b1, r2.StatusCode, b2)
			}
			for _, h := range []string{"Content-Type", "Content-Length", "Cache-Control", "X-Request-Id"} {
				if r1.Header.Get(h) != r2.Header.Get(h) {
					t.Fatalf("%s %s: %s raw %q, typed %q", method, target, h, r1.Header.Get(h), r2.Header.Get(h))
				}
			}
			if method == http.MethodGet {
				if r1.StatusCode == http.StatusOK && len(b1) < 20 {
					t.Fatalf("%s: short body %s", target, b1)
				}
				return b1
			}
		}
		return nil
	}
	lists := []struct {
		name  string
		query string
		pages int // at least
	}{
		{"default", "", 1},
		{"by 7, -ip", "limit=7&sort=-ip", 20},
		{"by 13, last_seen", "limit=13&sort=last_seen", 10},
		{"by 1000, -first_seen", "limit=1000&sort=-first_seen", 1},
		{"q name", "q=h3&limit=4", 2},
		{"q escaped name", "q=" + url.QueryEscape("<b>&amp;") + "&limit=9", 2},
		{"q vendor", "q=acme&limit=50", 2},
		{"q none", "q=nothing-matches", 1},
		{"group", "group=g1&sort=-name&limit=3", 2},
		{"presence", "presence=offline&limit=30", 2},
		{"watched", "watched=true&ignored=false&limit=5", 2},
		{"network", "network=10.1.0.0/16&limit=11", 2},
	}
	seen := map[string]bool{}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			pages, cursor := 0, ""
			for {
				target := "/api/devices?" + l.query
				if cursor != "" {
					target += "&cursor=" + url.QueryEscape(cursor)
				}
				page := decode[projections.Page[projections.Device]](t, compare(t, target))
				for _, d := range page.Items {
					seen[d.ID] = true
				}
				pages++
				if page.NextCursor == nil {
					break
				}
				cursor = *page.NextCursor
			}
			if pages < l.pages {
				t.Errorf("%d pages, want at least %d", pages, l.pages)
			}
		})
	}
	if len(seen) != 150 {
		t.Fatalf("the lists showed %d devices, want 150", len(seen))
	}
	t.Run("every device", func(t *testing.T) {
		features := map[string]int{}
		for id := range seen {
			d := decode[projections.Device](t, compare(t, "/api/devices/"+id))
			if d.ID != id {
				t.Fatalf("asked %s, got %s", id, d.ID)
			}
			has := map[string]bool{
				"ports": len(d.Ports) > 0, "services": len(d.Services) > 0, "upnp": d.UPnP != nil,
				"retired address": len(d.Addresses) > 1, "offline": d.Presence == projections.PresenceOffline,
				"quiet": d.Presence == projections.PresenceQuiet, "no mac": d.MAC == nil, "vendor": d.Vendor != nil,
				"label": d.Label != nil, "group": d.Group != nil, "watched": d.Watched, "two names": len(d.Names) == 2,
			}
			for f, ok := range has {
				if ok {
					features[f]++
				}
			}
		}
		if len(features) != 12 {
			t.Errorf("the fixture lacks some features: %v", features)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, target := range []string{
			"/api/devices/dunknownunknownun",
			"/api/devices/x",
			"/api/devices?cursor=bm9wZQ",
			"/api/devices?sort=ip&cursor=" + url.QueryEscape(firstCursor(t, inv, "name")),
			"/api/devices?limit=0",
			"/api/devices/" + firstCursor(t, inv, "name") + "?x=1",
		} {
			compare(t, target)
		}
	})
}

func firstCursor(t *testing.T, inv *inventory.Inventory, sort string) string {
	t.Helper()
	_, next, err := inv.AppendDevicesJSON(context.Background(), nil, projections.DeviceFilter{Sort: sort, Limit: 1})
	if err != nil || next == nil {
		t.Fatalf("cursor: %v", err)
	}
	return *next
}

// benchRaw serves target from an inventory.Inventory of 1,000 devices
// through the whole middleware chain: the encoded-device path, or with
// typed the typed path (encoding/json of the views) for comparison.
// "{id}" in target is a device id.
func benchRaw(b *testing.B, target string, typed bool) {
	real := realInventory(b, 1000)
	var inv httpapi.Inventory = real
	if typed {
		inv = typedOnly{real}
	}
	if strings.Contains(target, "{id}") {
		page, err := real.ListDevices(context.Background(), projections.DeviceFilter{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		target = strings.ReplaceAll(target, "{id}", page.Items[0].ID)
	}
	cfg := httpapi.Config{ClientRate: 1e9, ClientBurst: 1 << 30, TokenRate: 1e9, TokenBurst: 1 << 30}
	h, err := httpapi.New(cfg, httpapi.Deps{
		Inventory: inv, Scans: &fakeInventory{}, // the scan log is not asked here
		Commander: &fakeCommander{}, Auth: &fakeAuth{}, Ready: &fakeReady{ready: true},
		Log: zerolog.New(io.Discard),
	})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+tokRead)
	if resp, _ := validator.Do(b, h, req); resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := discardRecorder{h: http.Header{}}
		h.ServeHTTP(&rec, req)
		if rec.code != http.StatusOK {
			b.Fatalf("status %d", rec.code)
		}
	}
}

// discardRecorder is a ResponseWriter that keeps only the status, so a
// benchmark measures the server rather than a recorder's copies.
type discardRecorder struct {
	h    http.Header
	code int
}

func (d *discardRecorder) Header() http.Header { return d.h }
func (d *discardRecorder) WriteHeader(code int) {
	if d.code == 0 {
		d.code = code
	}
}
func (d *discardRecorder) Write(p []byte) (int, error) {
	d.WriteHeader(http.StatusOK)
	return len(p), nil
}

func BenchmarkListDevicesRaw(b *testing.B)     { benchRaw(b, "/api/devices?limit=100", false) }
func BenchmarkListDevicesTyped(b *testing.B)   { benchRaw(b, "/api/devices?limit=100", true) }
func BenchmarkSearchDevicesRaw(b *testing.B)   { benchRaw(b, "/api/devices?limit=100&q=h1", false) }
func BenchmarkSearchDevicesTyped(b *testing.B) { benchRaw(b, "/api/devices?limit=100&q=h1", true) }
func BenchmarkGetDeviceRaw(b *testing.B)       { benchRaw(b, "/api/devices/{id}", false) }
func BenchmarkGetDeviceTyped(b *testing.B)     { benchRaw(b, "/api/devices/{id}", true) }
