package portscan

import (
	"context"
	"fmt"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// Settings are the scan.ports keys of the configuration. The package owns
// the type; the service's loader composes it, fills its defaults (off,
// 6h, 64 connections) and checks its ranges and the custom port list.
type Settings struct {
	Enabled     bool          `yaml:"enabled"`
	Interval    time.Duration `yaml:"interval"`
	Custom      string        `yaml:"custom"`
	Concurrency int           `yaml:"concurrency"`
}

// Poller scans every address the inventory knows (sources.Poller).
type Poller struct {
	// Known lists the addresses to probe, with the ports each device
	// advertises (probed too).
	Known  func(ctx context.Context) ([]sources.KnownAddress, error)
	Params Params
}

// NewPoller builds the port scan of s.
func NewPoller(s Settings, known func(ctx context.Context) ([]sources.KnownAddress, error)) (*Poller, error) {
	ports, err := Ports(s.Custom)
	if err != nil {
		return nil, fmt.Errorf("scan.ports.custom: %w", err)
	}
	return &Poller{Known: known, Params: Params{Ports: ports, Concurrency: s.Concurrency}}, nil
}

// Poll implements sources.Poller. With no known address yet it does
// nothing (nil, nil).
func (p *Poller) Poll(ctx context.Context) (sources.Result, error) {
	known, err := p.Known(ctx)
	if err != nil {
		return nil, fmt.Errorf("portscan: list known addresses: %w", err)
	}
	if len(known) == 0 {
		return nil, nil
	}
	targets := make([]Target, len(known))
	for i, k := range known {
		targets[i] = Target{IP: k.IP, Extra: k.Ports}
	}
	res, err := Scan(ctx, targets, p.Params)
	if res == nil {
		return nil, err
	}
	return res, err
}
