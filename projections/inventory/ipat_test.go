package inventory_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

func TestHoldingIndex(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	h := inventorytest.New(t, inventory.Options{AddressGrace: time.Hour})
	h.Sweep(at, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"))
	// Two hours later the address belongs to another device, and the
	// first moved to .6; its .5 is retired past the grace.
	h.Sweep(at.Add(2*time.Hour), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:02"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:01"))
	h.Sweep(at.Add(4*time.Hour), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:02"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:01"))
	first, second := h.Device("10.0.0.6").ID, h.Device("10.0.0.5").ID
	if first == second {
		t.Fatal("one device")
	}
	v := h.Inv.HoldingsVersion()
	x := inventory.NewHoldingIndex(h.Inv.Holdings())
	ip5, ip6 := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")
	tests := []struct {
		name string
		ip   netip.Addr
		t    time.Time
		want string
	}{
		{"before anyone saw it: the next holder", ip5, at.Add(-time.Hour), first},
		{"first holder", ip5, at.Add(time.Hour), first},
		{"taken over: the newer span wins", ip5, at.Add(3 * time.Hour), second},
		{"after the first's retirement", ip5, at.Add(5 * time.Hour), second},
		{"the moved device", ip6, at.Add(3 * time.Hour), first},
		{"mapped v4 form", netip.MustParseAddr("::ffff:10.0.0.6"), at.Add(3 * time.Hour), first},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := x.At(tc.ip, tc.t)
			if !ok || got != tc.want {
				t.Fatalf("At(%s, %s) = %q %v, want %q", tc.ip, tc.t, got, ok, tc.want)
			}
		})
	}
	if _, ok := x.At(netip.MustParseAddr("10.0.0.99"), at); ok {
		t.Fatal("an address nobody held has a holder")
	}
	hs, err := h.Inv.DeviceHoldings(first)
	if err != nil || len(hs) != 2 {
		t.Fatalf("holdings of the first device: %+v %v", hs, err)
	}
	if _, err := h.Inv.DeviceHoldings("dnope"); err != projections.ErrNotFound {
		t.Fatalf("unknown device: %v", err)
	}
	h.Sweep(at.Add(5*time.Hour), true, inventorytest.Host("10.0.0.7", "00:11:22:00:00:03"))
	if h.Inv.HoldingsVersion() == v {
		t.Fatal("the version did not change with a new device")
	}
}
