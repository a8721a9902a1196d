package main

import (
	"testing"
	"time"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// inventory.address_grace: 0s is the smallest grace, not the inventory's
// default of 6h (its Options take 0 as "unset").
func TestAddressGraceZero(t *testing.T) {
	cfg := config.Defaults()
	if g := addressGrace(&cfg); g != 6*time.Hour {
		t.Errorf("default: %v", g)
	}
	cfg.Inventory.AddressGrace = 0
	if g := addressGrace(&cfg); g != time.Nanosecond {
		t.Errorf("0s: %v, want the smallest grace", g)
	}
	cfg.Inventory.AddressGrace = config.Duration(2 * time.Hour)
	if g := addressGrace(&cfg); g != 2*time.Hour {
		t.Errorf("2h: %v", g)
	}
}
