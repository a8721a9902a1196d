package ssdp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/sources"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Response
		wantErr bool
	}{
		{name: "minidlna style", in: "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=1810\r\nDATE: x\r\nST: upnp:rootdevice\r\n" +
			"USN: uuid:4d696e69::upnp:rootdevice\r\nEXT:\r\nSERVER: Debian DLNADOC/1.50 UPnP/1.0 MiniDLNA/1.3.0\r\n" +
			"LOCATION: http://10.77.0.12:8200/rootDesc.xml\r\nContent-Length: 0\r\n\r\n",
			want: Response{Location: "http://10.77.0.12:8200/rootDesc.xml", USN: "uuid:4d696e69::upnp:rootdevice",
				ST: "upnp:rootdevice", Server: "Debian DLNADOC/1.50 UPnP/1.0 MiniDLNA/1.3.0"}},
		{name: "bare LF, lower-case names, no final blank line", in: "HTTP/1.0 200 OK\nlocation:http://1.2.3.4/d.xml\nusn: u",
			want: Response{Location: "http://1.2.3.4/d.xml", USN: "u"}},
		{name: "junk header line tolerated", in: "HTTP/1.1 200 OK\r\nnonsense\r\nLOCATION: http://1.2.3.4/\r\n\r\n",
			want: Response{Location: "http://1.2.3.4/"}},
		{name: "headers after the blank line ignored", in: "HTTP/1.1 200 OK\r\n\r\nLOCATION: http://1.2.3.4/\r\n", wantErr: true},
		{name: "NOTIFY", in: "NOTIFY * HTTP/1.1\r\nLOCATION: http://1.2.3.4/\r\n\r\n", wantErr: true},
		{name: "M-SEARCH echoed", in: string(SearchRequest(1)), wantErr: true},
		{name: "error status", in: "HTTP/1.1 404 Not Found\r\nLOCATION: http://1.2.3.4/\r\n\r\n", wantErr: true},
		{name: "no location", in: "HTTP/1.1 200 OK\r\nST: x\r\n\r\n", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "too many headers", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: y\r\n", 100) + "LOCATION: http://1.2.3.4/\r\n\r\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseResponse([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckLocation(t *testing.T) {
	from := netip.MustParseAddr("192.0.2.60")
	tests := []struct {
		loc  string
		want string // "" = refused
	}{
		{"http://192.0.2.60:8200/rootDesc.xml", "http://192.0.2.60:8200/rootDesc.xml"},
		{"HTTP://192.0.2.60/d.xml#x", "http://192.0.2.60/d.xml"},
		{"http://[::ffff:192.0.2.60]:80/d.xml", "http://[::ffff:192.0.2.60]:80/d.xml"},
		{"http://192.0.2.61:8200/rootDesc.xml", ""},
		{"http://127.0.0.1:8200/rootDesc.xml", ""},
		{"http://nas.lan:8200/rootDesc.xml", ""},
		{"https://192.0.2.60/d.xml", ""},
		{"file:///etc/passwd", ""},
		{"http://user:pw@192.0.2.60/d.xml", ""},
		{"http://192.0.2.60:99999/d.xml", ""},
		{"http://192.0.2.60:0/d.xml", ""},
		{"http://[fe80::1%25eth0]/d.xml", ""},
		{"/rootDesc.xml", ""},
		{"http://192.0.2.60/" + strings.Repeat("a", 2000), ""},
		{"http://%zz/", ""},
	}
	for _, tc := range tests {
		t.Run(tc.loc[:min(len(tc.loc), 40)], func(t *testing.T) {
			u, err := CheckLocation(tc.loc, from)
			if tc.want == "" {
				if !errors.Is(err, ErrLocationRefused) {
					t.Fatalf("accepted %v (err %v)", u, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if u.String() != tc.want {
				t.Errorf("URL = %s, want %s", u, tc.want)
			}
		})
	}
}

func TestParseDescription(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    sources.UPnP
		wantErr bool
	}{
		{name: "namespaced", in: fmt.Sprintf(goodDesc, "TV"),
			want: sources.UPnP{FriendlyName: "TV", Manufacturer: "ACME & Sons", ModelName: "Box 3000"}},
		{name: "prefixed namespace", in: `<u:root xmlns:u="urn:schemas-upnp-org:device-1-0"><u:device><u:friendlyName> A  B </u:friendlyName></u:device></u:root>`,
			want: sources.UPnP{FriendlyName: "A B"}},
		{name: "no namespace, no specVersion", in: `<root><device><modelName>M</modelName></device></root>`,
			want: sources.UPnP{ModelName: "M"}},
		{name: "nested device names ignored", in: `<root><device><deviceList><device><friendlyName>inner</friendlyName></device></deviceList><friendlyName>outer</friendlyName></device></root>`,
			want: sources.UPnP{FriendlyName: "outer"}},
		{name: "HTML entity and white space", in: "<root><device><friendlyName>caf&eacute;\t&#10; x&#x85;</friendlyName></device></root>",
			want: sources.UPnP{FriendlyName: "café x"}},
		{name: "control character", in: "<root><device><friendlyName>a\x01b</friendlyName></device></root>", wantErr: true},
		{name: "latin-1", in: "<?xml version=\"1.0\" encoding=\"iso-8859-1\"?><root><device><friendlyName>Caf\xe9</friendlyName></device></root>",
			want: sources.UPnP{FriendlyName: "Café"}},
		{name: "broken after the name", in: `<root><device><friendlyName>X</friendlyName><manufacturer>Y</manufacturer><<<`,
			want: sources.UPnP{FriendlyName: "X", Manufacturer: "Y"}},
		{name: "long name cut", in: "<root><device><friendlyName>" + strings.Repeat("é", 1000) + "</friendlyName></device></root>",
			want: sources.UPnP{FriendlyName: strings.Repeat("é", maxField)}},
		{name: "unknown charset", in: `<?xml version="1.0" encoding="ebcdic"?><root><device><friendlyName>X</friendlyName></device></root>`, wantErr: true},
		{name: "html page", in: "<html><body>hi</body></html>", wantErr: true},
		{name: "empty device", in: "<root><device></device></root>", wantErr: true},
		{name: "not xml", in: "\x00\x01\x02", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "deep nesting", in: strings.Repeat("<a>", 10000), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDescription([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, ErrBadDescription) {
					t.Fatalf("err = %v (got %+v), want ErrBadDescription", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCaptured parses a reply and description captured from minidlna.
func TestCaptured(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-reply.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ParseResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CheckLocation(resp.Location, netip.MustParseAddr("10.77.0.12")); err != nil {
		t.Errorf("minidlna location %q: %v", resp.Location, err)
	}
	b, err = os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-rootDesc.xml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDescription(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sources.UPnP{FriendlyName: "Living Room TV", Manufacturer: "Justin Maggard", ModelName: "Windows Media Connect compatible (MiniDLNA)"}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func FuzzParseResponse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-reply.txt")); err == nil {
		f.Add(b)
	}
	f.Add([]byte("HTTP/1.1 200 OK\nLOCATION: http://192.0.2.60:1/\n\n"))
	f.Add(SearchRequest(2))
	from := netip.MustParseAddr("192.0.2.60")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseResponse(b)
		if err != nil {
			return
		}
		u, err := CheckLocation(r.Location, from)
		if err != nil {
			return
		}
		if a, err := netip.ParseAddr(u.Hostname()); err != nil || a.Unmap() != from || u.Scheme != "http" {
			t.Fatalf("accepted location %q → %v", r.Location, u)
		}
	})
}

func FuzzParseDescription(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-rootDesc.xml")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(fmt.Sprintf(goodDesc, "TV")))
	f.Add([]byte("<?xml version=\"1.0\" encoding=\"latin1\"?><root><device><friendlyName>\xe9</friendlyName></device></root>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDescription(b)
		if err != nil {
			return
		}
		for _, s := range []string{d.FriendlyName, d.Manufacturer, d.ModelName} {
			if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxField || strings.TrimSpace(s) != s {
				t.Fatalf("field %q", s)
			}
		}
	})
}

func BenchmarkParseDescription(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-rootDesc.xml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseDescription(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseResponse(b *testing.B) {
	pkt, err := os.ReadFile(filepath.Join("testdata", "minidlna-1.3.0-reply.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseResponse(pkt); err != nil {
			b.Fatal(err)
		}
	}
}
