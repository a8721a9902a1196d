package ssdp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/jocasta/jocasta/sources/resolve/onlink"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/sources"
)

const goodDesc = `<?xml version="1.0"?>
<root xmlns="urn:schemas-upnp-org:device-1-0">
  <specVersion><major>1</major><minor>0</minor></specVersion>
  <device>
    <deviceType>urn:schemas-upnp-org:device:MediaRenderer:1</deviceType>
    <friendlyName>%s</friendlyName>
    <manufacturer>ACME &amp; Sons</manufacturer>
    <modelName>Box 3000</modelName>
    <deviceList><device><friendlyName>Nested</friendlyName></device></deviceList>
  </device>
</root>`

// webServer is an httptest server on one loopback address that counts
// requests per path.
type webServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func startWeb(t *testing.T, ip string, routes map[string]http.HandlerFunc) *webServer {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	w := &webServer{hits: map[string]int{}}
	w.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.hits[r.URL.Path]++
		w.mu.Unlock()
		if h, ok := routes[r.URL.Path]; ok {
			h(rw, r)
			return
		}
		http.NotFound(rw, r)
	}))
	w.Listener.Close()
	w.Listener = l
	w.Start()
	t.Cleanup(w.Close)
	return w
}

func (w *webServer) count(path string) int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hits[path]
}

func xmlHandler(body string) http.HandlerFunc {
	return func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", `text/xml; charset="utf-8"`)
		_, _ = io.WriteString(rw, body)
	}
}

// huge streams 10 MB of XML; with declared set it also sends the length.
func huge(declared bool, wrote *atomic.Int64) http.HandlerFunc {
	return func(rw http.ResponseWriter, _ *http.Request) {
		const total = 10 << 20
		if declared {
			rw.Header().Set("Content-Length", fmt.Sprint(total))
		}
		chunk := bytes.Repeat([]byte("<x>padding</x>"), 32<<10/14)
		_, _ = io.WriteString(rw, "<root><device><friendlyName>Huge</friendlyName>")
		for n := 0; n < total-len(chunk); n += len(chunk) {
			m, err := rw.Write(chunk)
			wrote.Add(int64(m))
			if err != nil {
				return
			}
			if f, ok := rw.(http.Flusher); ok && !declared {
				f.Flush()
			}
		}
	}
}

func ssdpReply(location, usn string) []byte {
	return []byte("HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1800\r\nEXT:\r\n" +
		"LOCATION: " + location + "\r\nSERVER: Linux/5 UPnP/1.0 test/1\r\n" +
		"ST: upnp:rootdevice\r\nUSN: " + usn + "\r\n\r\n")
}

// fakeGroup plays 239.255.255.250: every M-SEARCH it gets is answered by
// each device from its own address.
type fakeGroup struct {
	conn     *net.UDPConn
	mu       sync.Mutex
	searches []string
}

type ssdpDevice struct {
	ip      string
	replies [][]byte
	conn    *net.UDPConn
}

func startGroup(t *testing.T, devices []*ssdpDevice) *fakeGroup {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devices {
		if d.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(d.ip)}); err != nil {
			t.Fatal(err)
		}
	}
	g := &fakeGroup{conn: conn}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			g.mu.Lock()
			g.searches = append(g.searches, string(buf[:n]))
			g.mu.Unlock()
			for _, d := range devices {
				for _, p := range d.replies {
					_, _ = d.conn.WriteToUDPAddrPort(p, src)
				}
			}
		}
	})
	t.Cleanup(func() {
		conn.Close()
		wg.Wait()
		for _, d := range devices {
			d.conn.Close()
		}
	})
	return g
}

func loopbackLinks(t *testing.T) onlink.Links {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	return onlink.Links{{Prefix: netip.MustParsePrefix("127.0.0.0/8"), Interface: *lo}}
}

func TestEnrich(t *testing.T) {
	var wroteDeclared, wroteStreamed atomic.Int64
	s10 := startWeb(t, "127.0.0.10", map[string]http.HandlerFunc{
		"/desc.xml":  xmlHandler(fmt.Sprintf(goodDesc, "Living Room TV")),
		"/spoof.xml": xmlHandler(fmt.Sprintf(goodDesc, "Spoofed")),
	})
	s11 := startWeb(t, "127.0.0.11", map[string]http.HandlerFunc{"/d.xml": xmlHandler(fmt.Sprintf(goodDesc, "NAS Media"))})
	s13 := startWeb(t, "127.0.0.13", map[string]http.HandlerFunc{"/huge.xml": huge(true, &wroteDeclared)})
	s19 := startWeb(t, "127.0.0.19", map[string]http.HandlerFunc{"/huge.xml": huge(false, &wroteStreamed)})
	s15 := startWeb(t, "127.0.0.15", map[string]http.HandlerFunc{"/d.xml": xmlHandler("<html><body>hello</body></html>")})
	s16 := startWeb(t, "127.0.0.16", map[string]http.HandlerFunc{"/d.xml": func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, s10.URL+"/spoof.xml", http.StatusFound)
	}})
	s17 := startWeb(t, "127.0.0.17", map[string]http.HandlerFunc{"/d.xml": func(rw http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(rw, "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<root><device><friendlyName>Caf\xe9</friendlyName></device></root>")
	}})
	s18 := startWeb(t, "127.0.0.18", map[string]http.HandlerFunc{"/d.xml": xmlHandler(fmt.Sprintf(goodDesc, "Not swept"))})
	s20 := startWeb(t, "127.0.0.20", map[string]http.HandlerFunc{"/d.xml": func(rw http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}})

	devices := []*ssdpDevice{
		{ip: "127.0.0.10", replies: [][]byte{ssdpReply(s10.URL+"/desc.xml", "uuid:10::upnp:rootdevice")}},
		{ip: "127.0.0.11", replies: [][]byte{ssdpReply(s11.URL+"/d.xml", "uuid:11")}},
		{ip: "127.0.0.12", replies: [][]byte{ssdpReply(s10.URL+"/spoof.xml", "uuid:12")}},
		{ip: "127.0.0.13", replies: [][]byte{ssdpReply(s13.URL+"/huge.xml", "uuid:13")}},
		{ip: "127.0.0.14", replies: [][]byte{[]byte("NOTIFY * HTTP/1.1\r\n\r\n"), {0xff, 0x00}}},
		{ip: "127.0.0.15", replies: [][]byte{ssdpReply(s15.URL+"/d.xml", "uuid:15")}},
		{ip: "127.0.0.16", replies: [][]byte{ssdpReply(s16.URL+"/d.xml", "uuid:16")}},
		{ip: "127.0.0.17", replies: [][]byte{
			ssdpReply(s17.URL+"/d.xml", "uuid:17::upnp:rootdevice"),
			ssdpReply(s17.URL+"/d.xml", "uuid:17::urn:schemas-upnp-org:service:X:1"),
			ssdpReply(s17.URL+"/d.xml#frag", "uuid:17::upnp:rootdevice"),
		}},
		{ip: "127.0.0.18", replies: [][]byte{ssdpReply(s18.URL+"/d.xml", "uuid:18")}},
		{ip: "127.0.0.19", replies: [][]byte{ssdpReply(s19.URL+"/huge.xml", "uuid:19")}},
		{ip: "127.0.0.20", replies: [][]byte{ssdpReply(s20.URL+"/d.xml", "uuid:20")}},
		{ip: "127.0.0.21", replies: [][]byte{ssdpReply("http://printer.lan:80/d.xml", "uuid:21")}},
	}
	g := startGroup(t, devices)

	ips := []string{"10", "11", "12", "13", "14", "15", "16", "17", "19", "20", "21"}
	hosts := map[string]*sources.Host{}
	var list []*sources.Host
	for _, last := range ips {
		h := &sources.Host{IP: netip.MustParseAddr("127.0.0." + last)}
		hosts[last] = h
		list = append(list, h)
	}
	hosts["11"].SetName("dns", "nas.lan")

	r := New(Options{Timeout: 500 * time.Millisecond})
	r.group = g.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	r.listen = 300 * time.Millisecond
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	err := r.Enrich(context.Background(), list)
	t.Logf("Enrich error (expected):\n%v", err)
	if err == nil {
		t.Fatal("Enrich: no error for refused locations and bad descriptions")
	}
	for _, want := range []error{ErrLocationRefused, ErrTooLarge, ErrMalformed, ErrBadDescription} {
		if !errors.Is(err, want) {
			t.Errorf("error does not report %v:\n%v", want, err)
		}
	}
	for _, want := range []string{"127.0.0.12", "127.0.0.21", "127.0.0.16", "127.0.0.20"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}

	acme := func(name string) *sources.UPnP {
		return &sources.UPnP{FriendlyName: name, Manufacturer: "ACME & Sons", ModelName: "Box 3000"}
	}
	tests := []struct {
		last     string
		wantName string
		want     *sources.UPnP
	}{
		{"10", "Living Room TV", acme("Living Room TV")},
		{"11", "", acme("NAS Media")},
		{"12", "", nil}, // LOCATION on another host: refused
		{"13", "", nil}, // 10 MB declared
		{"14", "", nil}, // garbage
		{"15", "", nil}, // HTML
		{"16", "", nil}, // redirect to another host
		{"17", "Café", &sources.UPnP{FriendlyName: "Café"}},
		{"19", "", nil}, // 10 MB streamed
		{"20", "", nil}, // never answers
		{"21", "", nil}, // host name in LOCATION
	}
	for _, tc := range tests {
		t.Run("127.0.0."+tc.last, func(t *testing.T) {
			h := hosts[tc.last]
			if got := h.Names[sources.NameSSDP]; got != tc.wantName {
				t.Errorf("ssdp name = %q, want %q", got, tc.wantName)
			}
			if diff := cmp.Diff(tc.want, h.UPnP); diff != "" {
				t.Errorf("UPnP (-want +got):\n%s", diff)
			}
		})
	}
	if n := s10.count("/spoof.xml"); n != 0 {
		t.Errorf("spoofed location fetched %d times", n)
	}
	if n := s10.count("/desc.xml"); n != 1 {
		t.Errorf("good description fetched %d times, want 1", n)
	}
	if n := s17.count("/d.xml"); n != 1 {
		t.Errorf("duplicate replies fetched %d times, want 1", n)
	}
	if n := s18.count("/d.xml"); n != 0 {
		t.Errorf("host outside the sweep fetched %d times", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.searches) != 1 {
		t.Fatalf("%d searches, want 1", len(g.searches))
	}
	for _, want := range []string{"M-SEARCH * HTTP/1.1\r\n", "MAN: \"ssdp:discover\"\r\n", "ST: ssdp:all\r\n", "MX: 1\r\n"} {
		if !strings.Contains(g.searches[0], want) {
			t.Errorf("search lacks %q:\n%s", want, g.searches[0])
		}
	}
	if !strings.HasSuffix(g.searches[0], "\r\n\r\n") {
		t.Error("search does not end with an empty line")
	}
}

// countingReader counts what is read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReadLimited(t *testing.T) {
	const limit = 256 << 10
	tests := []struct {
		name    string
		size    int64
		wantErr bool
	}{
		{"small", 1000, false},
		{"exactly the cap", limit, false},
		{"one byte over", limit + 1, true},
		{"10 MB", 10 << 20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: io.LimitReader(zeroReader{}, tc.size)}
			b, err := readLimited(src, limit)
			if tc.wantErr != errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge: %v", err, tc.wantErr)
			}
			if !tc.wantErr && int64(len(b)) != tc.size {
				t.Errorf("read %d bytes, want %d", len(b), tc.size)
			}
			if src.n > limit+1 {
				t.Errorf("read %d bytes from the body, cap is %d", src.n, limit+1)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestEnrichNoLink(t *testing.T) {
	r := New(Options{})
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	if err := r.Enrich(context.Background(), []*sources.Host{{IP: netip.MustParseAddr("192.0.2.1")}}); !errors.Is(err, ErrNoLink) {
		t.Errorf("err = %v, want ErrNoLink", err)
	}
}

func TestCancel(t *testing.T) {
	g := startGroup(t, nil)
	r := New(Options{MX: 5})
	r.group = g.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Enrich(ctx, []*sources.Host{{IP: netip.MustParseAddr("127.0.0.10")}}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Enrich ignored the context (listen window is 6 s)")
	}
}
