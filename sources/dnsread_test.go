package sources

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

func TestNormalizeDomain(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Example.COM.", "example.com"},
		{" a.b ", "a.b"},
		{".", ""},
		{"", ""},
		{"bad name", ""},
		{"x\x00y", ""},
		{string(make([]byte, 254)), ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example"},
	} {
		if got := NormalizeDomain(tc.in); got != tc.want {
			t.Errorf("NormalizeDomain(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDNSAggregator(t *testing.T) {
	var a DNSAggregator
	h := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	c1, c2 := netip.MustParseAddr("::ffff:192.0.2.50"), netip.MustParseAddr("2001:db8::1%eth0")
	ip := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	a.Add(h.Add(59*time.Minute), c1, "B.example.", false, []netip.Addr{ip("192.0.2.9"), ip("192.0.2.1")})
	a.Add(h.Add(time.Minute), c1, "b.example", true, []netip.Addr{ip("192.0.2.1")})
	a.Add(h.Add(61*time.Minute), c1, "b.example", false, nil)
	a.Add(h, c2, "a.example", false, nil)
	a.Add(h, netip.Addr{}, "a.example", false, nil) // no client
	a.Add(h, c1, "", false, nil)                    // no question
	a.Skip()
	want := []DNSRow{
		{Hour: h, Client: ip("192.0.2.50"), Domain: "b.example", Count: 2, Blocked: 1, Answers: []netip.Addr{ip("192.0.2.1"), ip("192.0.2.9")}},
		{Hour: h, Client: ip("2001:db8::1"), Domain: "a.example", Count: 1},
		{Hour: h.Add(time.Hour), Client: ip("192.0.2.50"), Domain: "b.example", Count: 1},
	}
	if got := a.Rows(); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows\n got %+v\nwant %+v", got, want)
	}
	if a.Entries() != 4 || a.Skipped() != 3 {
		t.Fatalf("entries %d skipped %d", a.Entries(), a.Skipped())
	}
	// Answers are bounded.
	var b DNSAggregator
	for i := range 20 {
		b.Add(h, c1, "many.example", false, []netip.Addr{netip.AddrFrom4([4]byte{10, 0, 0, byte(i)})})
	}
	if r := b.Rows(); len(r) != 1 || len(r[0].Answers) != MaxDNSAnswers || r[0].Count != 20 {
		t.Fatalf("bounded answers: %+v", r)
	}
}

func TestDNSMark(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)
	var m DNSMark
	if m.String() != "" || m.Counted(t0, 0, 1) {
		t.Fatal("the zero mark counted something")
	}
	m = m.Advance(t0, 0, 7).Advance(t0, 0, 8).Advance(t0.Add(-time.Second), 0, 9).Advance(t0, 0, 7)
	for _, tc := range []struct {
		at   time.Time
		key  uint64
		want bool
	}{
		{t0.Add(-time.Nanosecond), 1, true},
		{t0, 7, true},
		{t0, 8, true},
		{t0, 9, false},
		{t0.Add(time.Nanosecond), 7, false},
	} {
		if got := m.Counted(tc.at, 0, tc.key); got != tc.want {
			t.Errorf("Counted(%v, %d) = %v", tc.at, tc.key, got)
		}
	}
	back, err := ParseDNSMark(m.String())
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip %q: %+v %v", m.String(), back, err)
	}
	// With ids, the id decides.
	im := DNSMark{}.Advance(t0, 52011, 0)
	if !im.Counted(t0.Add(time.Hour), 52011, 0) || im.Counted(t0.Add(-time.Hour), 52012, 0) {
		t.Fatal("ids do not decide")
	}
	for _, bad := range []string{"v2 1 2 ", "v1 x 2 ", "v1 1 y ", "v1 1 2 !", "garbage"} {
		if _, err := ParseDNSMark(bad); err == nil {
			t.Errorf("ParseDNSMark(%q) accepted", bad)
		}
	}
	if DNSEntryKey("a", "bc") == DNSEntryKey("ab", "c") {
		t.Error("entry keys of different parts collide")
	}
}

func TestRecordedMark(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	good := DNSMark{}.Advance(t0, 42, 0)
	cursor := func(s string, err error) func(context.Context, string) (string, error) {
		return func(_ context.Context, src string) (string, error) {
			if src != "dnsnode:home" {
				return "", fmt.Errorf("asked for %q", src)
			}
			return s, err
		}
	}
	for _, tc := range []struct {
		name    string
		cursor  func(context.Context, string) (string, error)
		want    DNSMark
		wantErr string
	}{
		{name: "no cursor function"},
		{name: "none recorded", cursor: cursor("", nil)},
		{name: "recorded", cursor: cursor(good.String(), nil), want: good},
		{name: "unreadable", cursor: cursor("v9 what", nil)},
		{name: "log fails", cursor: cursor("", errors.New("disk gone")), wantErr: "the cursor of dnsnode:home in the log: disk gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DNSReaderOptions{Source: "dnsnode:home", Cursor: tc.cursor}
			o.SetDefaults()
			got, err := o.RecordedMark(context.Background())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("mark = %+v, want %+v", got, tc.want)
			}
		})
	}
}
