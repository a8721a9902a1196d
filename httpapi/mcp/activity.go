package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/traffic"
)

// Traffic and DNS are the read models of the activity tools; each is
// optional (its tool is not offered without it).
type (
	Traffic interface {
		DeviceTraffic(ctx context.Context, id string, f traffic.Filter) (projections.Page[traffic.Item], error)
	}
	DNS interface {
		DeviceLookups(ctx context.Context, id string, f dns.Filter) (projections.Page[dns.Item], error)
	}
)

// ActivityIn are the arguments of device_traffic and device_dns.
type ActivityIn struct {
	ID    string `json:"id" jsonschema:"the device id (from search_devices)"`
	Since string `json:"since,omitempty" jsonschema:"the first hour, RFC 3339 (default: 24 hours before until)"`
	Until string `json:"until,omitempty" jsonschema:"the end, RFC 3339 (default: now); at most 31 days after since"`
	By    string `json:"by,omitempty" jsonschema:"device_traffic only: peer (default), country or hour"`
	Q     string `json:"q,omitempty" jsonschema:"only items whose peer, name, country or domain contains this text"`
	Limit int    `json:"limit,omitempty" jsonschema:"most items returned, 1 to 200 (default 50)"`
}

// TrafficOut is a device's traffic totals.
type TrafficOut struct {
	Items []traffic.Item `json:"items"`
}

// DNSOut is a device's hourly lookups.
type DNSOut struct {
	Items []dns.Item `json:"items"`
}

// activityRange reads since and until: until defaults to now, since to a
// day before; at most 31 days.
func activityRange(in ActivityIn) (since, until time.Time, err error) {
	until = time.Now().UTC()
	if u, err := parseTime("until", in.Until); err != nil {
		return since, until, err
	} else if u != nil {
		until = *u
	}
	since = until.Add(-24 * time.Hour)
	if s, err := parseTime("since", in.Since); err != nil {
		return since, until, err
	} else if s != nil {
		since = *s
	}
	if !since.Before(until) || until.Sub(since) > 31*24*time.Hour {
		return since, until, errors.New("since and until: since must be before until, and at most 31 days before it")
	}
	return since, until, nil
}

func (t *tools) traffic(ctx context.Context, _ *sdk.CallToolRequest, in ActivityIn) (*sdk.CallToolResult, TrafficOut, error) {
	since, until, err := activityRange(in)
	if err != nil {
		return nil, TrafficOut{}, err
	}
	n, err := limit(in.Limit, 50, 200)
	if err != nil {
		return nil, TrafficOut{}, err
	}
	by := in.By
	switch by {
	case "", traffic.ByPeer, traffic.ByCountry, traffic.ByHour:
	default:
		return nil, TrafficOut{}, fmt.Errorf("by %q: give peer, country or hour", by)
	}
	page, err := t.d.Traffic.DeviceTraffic(ctx, in.ID, traffic.Filter{Since: since, Until: until, By: by, Q: in.Q, Limit: n})
	if errors.Is(err, projections.ErrNotFound) {
		return nil, TrafficOut{}, fmt.Errorf("no device %q: find ids with search_devices", in.ID)
	}
	if err != nil {
		return nil, TrafficOut{}, err
	}
	out := TrafficOut{Items: page.Items}
	if out.Items == nil {
		out.Items = []traffic.Item{}
	}
	return nil, out, nil
}

func (t *tools) dnsLookups(ctx context.Context, _ *sdk.CallToolRequest, in ActivityIn) (*sdk.CallToolResult, DNSOut, error) {
	since, until, err := activityRange(in)
	if err != nil {
		return nil, DNSOut{}, err
	}
	n, err := limit(in.Limit, 50, 200)
	if err != nil {
		return nil, DNSOut{}, err
	}
	page, err := t.d.DNS.DeviceLookups(ctx, in.ID, dns.Filter{Since: since, Until: until, Q: in.Q, Limit: n})
	if errors.Is(err, projections.ErrNotFound) {
		return nil, DNSOut{}, fmt.Errorf("no device %q: find ids with search_devices", in.ID)
	}
	if err != nil {
		return nil, DNSOut{}, err
	}
	out := DNSOut{Items: page.Items}
	if out.Items == nil {
		out.Items = []dns.Item{}
	}
	return nil, out, nil
}

// registerActivity offers the traffic and DNS tools whose read model is
// recorded.
func (t *tools) registerActivity(s *sdk.Server) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	if t.d.Traffic != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "device_traffic", Annotations: ro, Description: "Who a device talked to, from the routers' flow exports: " +
			"hourly totals over since..until (default the last 24 hours, at most 31 days) grouped by peer address (default; with the peer's " +
			"name from DNS answers and its country), by country or by hour, largest first (by hour: oldest first). Each item has bytes_in, " +
			"bytes_out, packets_in, packets_out, flows_in, flows_out (in is towards the device). Up to limit items (default 50, at most 200)."}, t.traffic)
	}
	if t.d.DNS != nil {
		sdk.AddTool(s, &sdk.Tool{Name: "device_dns", Annotations: ro, Description: "What a device looked up, from the DNS servers' query logs: " +
			"one item per hour and domain over since..until (default the last 24 hours, at most 31 days), newest hour first: hour (RFC 3339 UTC), " +
			"domain, count (queries), blocked (how many the servers blocked), answers (the addresses the answers held). q filters domains. " +
			"Up to limit items (default 50, at most 200)."}, t.dnsLookups)
	}
}
