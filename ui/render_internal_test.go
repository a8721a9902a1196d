package ui

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/history"
)

// TestEveryTemplateRegistered keeps pages and templates/ in step: a file
// not listed would never be parsed, a listed page with no file fails.
func TestEveryTemplateRegistered(t *testing.T) {
	entries, err := fs.ReadDir(files, "templates")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name != "layout" {
			onDisk = append(onDisk, name)
		}
	}
	want := slices.Clone(pages)
	slices.Sort(want)
	slices.Sort(onDisk)
	if !slices.Equal(want, onDisk) {
		t.Fatalf("templates/ has %v, pages lists %v", onDisk, want)
	}
	for _, p := range pages {
		if titles[p] == "" {
			t.Errorf("page %s has no title", p)
		}
	}
}

func TestAssets(t *testing.T) {
	as, err := loadAssets()
	if err != nil {
		t.Fatal(err)
	}
	if got := as.names(); !slices.Equal(got, []string{"icon.svg", "style.css", "world.svg"}) {
		t.Fatalf("assets %v", got)
	}
	u, err := as.url("style.css")
	if err != nil || !strings.HasPrefix(u, "/static/style.") || !strings.HasSuffix(u, ".css") || len(u) != len("/static/style.")+12+len(".css") {
		t.Fatalf("url %q, %v", u, err)
	}
	if _, err := as.url("app.js"); err == nil {
		t.Fatal("url of a missing asset")
	}
	// Each served with its type from assetTypes, not the machine's MIME
	// database (which serve never loads).
	for name, want := range map[string]string{"icon.svg": "image/svg+xml", "style.css": "text/css; charset=utf-8", "world.svg": "image/svg+xml"} {
		u, _ := as.url(name)
		rec := httptest.NewRecorder()
		as.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != want {
			t.Errorf("%s: %d %q, want %q", name, rec.Code, rec.Header().Get("Content-Type"), want)
		}
	}
}

func TestBuildStrip(t *testing.T) {
	to := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	from := to.Add(-10 * time.Hour)
	at := func(h int) time.Time { return from.Add(time.Duration(h) * time.Hour) }
	entry := func(h int, kind string) projections.ChangeEntry {
		return projections.ChangeEntry{Time: at(h), Kind: kind}
	}
	tests := []struct {
		name    string
		entries []projections.ChangeEntry
		dev     projections.Device
		want    string // class:width,...
	}{
		{"no change, seen before", nil, projections.Device{Presence: "online", FirstSeen: at(-5)}, "online:1000.00"},
		{"no change, first seen inside", nil, projections.Device{Presence: "offline", FirstSeen: at(4)}, "unknown:400.00,offline:600.00"},
		{"discovered then offline", []projections.ChangeEntry{entry(7, projections.ChangeOffline), entry(2, projections.ChangeDiscovered)},
			projections.Device{Presence: "offline", FirstSeen: at(2)}, "unknown:200.00,online:500.00,offline:300.00"},
		{"online first: offline before", []projections.ChangeEntry{entry(5, projections.ChangeOnline)},
			projections.Device{Presence: "online", FirstSeen: at(-50)}, "offline:500.00,online:500.00"},
		{"quiet first: online before", []projections.ChangeEntry{entry(5, projections.ChangeQuiet), entry(8, projections.ChangeOnline)},
			projections.Device{Presence: "online", FirstSeen: at(-50)}, "online:500.00,quiet:300.00,online:200.00"},
		{"same state merges", []projections.ChangeEntry{entry(3, projections.ChangeOnline), entry(6, projections.ChangeOnline)},
			projections.Device{Presence: "online", FirstSeen: at(-50)}, "offline:300.00,online:700.00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := buildStrip(tc.entries, tc.dev, from, to, time.UTC)
			var got []string
			for _, s := range st.Segments {
				got = append(got, s.Class+":"+s.W)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("segments %s, want %s", strings.Join(got, ","), tc.want)
			}
		})
	}
	if st := buildStrip(nil, projections.Device{}, to, to, time.UTC); len(st.Segments) != 0 {
		t.Fatal("an empty window has segments")
	}
}

func TestLimiters(t *testing.T) {
	l := newLimiters(1, 2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2 {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("attempt %d refused within the burst", i)
		}
	}
	ok, retry := l.allow("a", now)
	if ok || retry <= 0 || retry > time.Second {
		t.Fatalf("past the burst: %v, retry %v", ok, retry)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Fatal("another key limited")
	}
	if ok, _ := l.allow("a", now.Add(time.Second)); !ok {
		t.Fatal("not refilled after a second")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/devices?q=a": "/devices?q=a", "": "", "//evil": "", "/\\evil": "", "https://x/": "", "devices": "", "/a\r\nb": "",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDeviceRowsEscaped(t *testing.T) {
	evil := `<script>alert("x")</script>`
	mac, vendor, label, group := `aa"><b>`, `Acme & <Co>`, `'quoted'`, `a<b`
	seen := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rows := []projections.Device{{ID: `id/"x`, Name: evil, Label: &label, MAC: &mac, Vendor: &vendor, Group: &group, Presence: `on"line`, Ignored: true, Watched: true,
		FirstSeen: seen, Addresses: []projections.Address{{IP: "<ip>", LastSeen: seen}}}}
	var b bytes.Buffer
	writeRows(&b, rows, time.UTC)
	got := b.String()
	for _, bad := range []string{"<script>", `"><b>`, "<Co>", "<ip>", `on"line`, "'quoted'", "a<b", `id/"x`} {
		if strings.Contains(got, bad) {
			t.Errorf("rows contain %q unescaped:\n%s", bad, got)
		}
	}
	for _, want := range []string{"&lt;script&gt;", `href="/devices/id%2F%22x"`, `class="ignored"`, "★", "Acme &amp; &lt;Co&gt;", "&lt;ip&gt;",
		`aria-label="Select &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"`, "&#39;quoted&#39;", "<td>2026-03-01 12:00:00 UTC</td><td>—</td>"} {
		if !strings.Contains(got, want) {
			t.Errorf("rows lack %q:\n%s", want, got)
		}
	}
	b.Reset()
	writeRows(&b, nil, time.UTC)
	if got := b.String(); !strings.Contains(got, "No device matches") {
		t.Errorf("empty rows: %s", got)
	}
}

// fieldText writes every value a diff can hold for a person, never Go's
// debug form of a struct or map.
func TestFieldText(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	lab := "lab"
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "—"},
		{"", "—"},
		{"nas", "nas"},
		{(*string)(nil), "—"},
		{&lab, "lab"},
		{true, "yes"},
		{[]string{}, "—"},
		{[]string{"sweep", "dns"}, "sweep, dns"},
		{[]history.Port{}, "—"},
		{[]history.Port{{Port: 22, Proto: "tcp", Service: "ssh"}, {Port: 9999, Proto: "tcp"}}, "22/tcp (ssh), 9999/tcp"},
		{map[string]history.Name{}, "—"},
		{map[string]history.Name{"mdns": {Name: "nas.local"}, "dns": {Name: "nas.lan"}}, "dns: nas.lan, mdns: nas.local"},
		{[]history.Address{}, "—"},
		{[]history.Address{{IP: "10.0.0.5"}, {IP: "10.0.0.6", RetiredAt: &at}}, "10.0.0.5, 10.0.0.6 (retired " + fmtTime(at, time.UTC) + ")"},
		{(*history.Attachment)(nil), "—"},
		{&history.Attachment{Source: "routerapi:core", Peer: "switch", Port: "ether3"}, "routerapi:core switch port ether3"},
	} {
		got := fieldText(tc.v, time.UTC)
		if got != tc.want {
			t.Errorf("fieldText(%#v) = %q, want %q", tc.v, got, tc.want)
		}
		if strings.ContainsAny(got, "{}[]") || strings.Contains(got, "map[") {
			t.Errorf("fieldText(%#v) = %q: Go's debug form", tc.v, got)
		}
	}
}
