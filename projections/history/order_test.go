package history_test

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections/history"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func addr(ip string, firstSeen time.Time, retired *time.Time) history.Address {
	return history.Address{IP: ip, FirstSeen: firstSeen, RetiredAt: retired}
}

func ptr[T any](v T) *T { return &v }

func TestCurrentIP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs []history.Address
		want  string // "" for none
	}{
		{"none", nil, ""},
		{"one", []history.Address{addr("10.0.0.1", t0, nil)}, "10.0.0.1"},
		{"only retired", []history.Address{addr("10.0.0.1", t0, ptr(t0))}, "10.0.0.1"},
		{"not retired before retired", []history.Address{addr("10.0.0.1", t0.Add(time.Hour), ptr(t0.Add(2*time.Hour))), addr("10.0.0.9", t0, nil)}, "10.0.0.9"},
		{"latest first seen of the current", []history.Address{addr("10.0.0.1", t0, nil), addr("fd00::1", t0.Add(time.Minute), nil)}, "fd00::1"},
		{"latest retired of the retired", []history.Address{addr("10.0.0.1", t0, ptr(t0.Add(2*time.Hour))), addr("10.0.0.2", t0, ptr(t0.Add(time.Hour)))}, "10.0.0.1"},
		{"a tie: the lower as text, as live", []history.Address{addr("10.0.0.9", t0, nil), addr("10.0.0.10", t0, nil)}, "10.0.0.10"},
		{"malformed", []history.Address{addr("nope", t0, nil)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := history.Device{Addresses: tc.addrs}
			var want netip.Addr
			if tc.want != "" {
				want = netip.MustParseAddr(tc.want)
			}
			if got := d.CurrentIP(); got != want {
				t.Fatalf("CurrentIP %v, want %v", got, want)
			}
		})
	}
}

// devices: ids d1..d6, names and addresses chosen so that each order
// differs, with ties broken by id.
func devices() []history.Device {
	return []history.Device{
		{ID: "d1", Name: "printer", FirstSeen: t0.Add(time.Hour), Addresses: []history.Address{addr("192.168.1.10", t0, nil)}},
		{ID: "d2", Name: "Alpha", FirstSeen: t0, Addresses: []history.Address{addr("fd00::1", t0, nil)}},
		{ID: "d3", Name: "alpha", FirstSeen: t0, Addresses: []history.Address{addr("192.168.1.9", t0, nil)}},
		{ID: "d4", Name: "nas", FirstSeen: t0.Add(-time.Hour)},
		{ID: "d5", Name: "zed", FirstSeen: t0, Addresses: []history.Address{addr("192.168.1.9", t0, nil)}},
		{ID: "d6", Name: "box", FirstSeen: t0.Add(-time.Hour), Addresses: []history.Address{addr("10.0.0.2", t0, nil)}},
	}
}

func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		order history.Order
		want  []string
	}{
		{history.Order{}, []string{"d2", "d3", "d6", "d4", "d1", "d5"}},
		{history.Order{Field: history.SortName}, []string{"d2", "d3", "d6", "d4", "d1", "d5"}},
		{history.Order{Field: history.SortName, Desc: true}, []string{"d5", "d1", "d4", "d6", "d3", "d2"}},
		{history.Order{Field: history.SortIP}, []string{"d4", "d6", "d3", "d5", "d1", "d2"}},
		{history.Order{Field: history.SortIP, Desc: true}, []string{"d2", "d1", "d5", "d3", "d6", "d4"}},
		{history.Order{Field: history.SortFirstSeen}, []string{"d4", "d6", "d2", "d3", "d5", "d1"}},
		{history.Order{Field: history.SortFirstSeen, Desc: true}, []string{"d1", "d5", "d3", "d2", "d6", "d4"}},
	} {
		name := tc.order.Field
		if tc.order.Desc {
			name = "-" + name
		}
		t.Run("sort="+name, func(t *testing.T) {
			ds := devices()
			ptrs := make([]*history.Device, len(ds))
			for k := range ds {
				ptrs[k] = &ds[k]
			}
			slices.SortFunc(ptrs, tc.order.Compare)
			var got []string
			for _, d := range ptrs {
				got = append(got, d.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
			// After the key and id of each device come exactly the
			// devices that follow it.
			for k, d := range ptrs {
				after, err := tc.order.After(tc.order.Key(d), d.ID)
				if err != nil {
					t.Fatalf("After(Key(%s)): %v", d.ID, err)
				}
				var rest []string
				for _, e := range ptrs {
					if after(e) {
						rest = append(rest, e.ID)
					}
				}
				if !slices.Equal(rest, tc.want[k+1:]) {
					t.Fatalf("after %s: %v, want %v", d.ID, rest, tc.want[k+1:])
				}
			}
		})
	}
}

func TestOrderAfterBadKey(t *testing.T) {
	for _, tc := range []struct {
		order history.Order
		key   string
	}{
		{history.Order{Field: history.SortIP}, "not an ip"},
		{history.Order{Field: history.SortIP}, "::ffff:10.0.0.1x"},
		{history.Order{Field: history.SortFirstSeen}, "yesterday"},
	} {
		if _, err := tc.order.After(tc.key, "d1"); !errors.Is(err, history.ErrBadSortKey) {
			t.Errorf("After(%q) for %s: %v, want ErrBadSortKey", tc.key, tc.order.Field, err)
		}
	}
}
