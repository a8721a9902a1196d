package ui

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/ui/worldmap"
)

// trafficRanges are the ranges the Traffic page offers, ending now.
var trafficRanges = []struct {
	Key   string
	Label string
	D     time.Duration
}{
	{"1h", "last hour", time.Hour},
	{"24h", "last 24 hours", 24 * time.Hour},
	{"7d", "last 7 days", 7 * 24 * time.Hour},
	{"30d", "last 30 days", 30 * 24 * time.Hour},
}

// Limits of the Traffic page: rows of each table, and countries on the
// map.
const (
	trafficTop       = 10
	trafficMapTop    = 50
	maxTrafficRange  = 400 * 24 * time.Hour // as GET /api/traffic
	devicePeersTop   = 10
	devicePeersRange = 24 * time.Hour
	// noTrafficPlugin is what would fill the page (the API's 404 says
	// the same).
	noTrafficPlugin = "flowlistener"
)

// trafficView is the Traffic page.
type trafficView struct {
	// Off is true when no flow listener records traffic.
	Off    bool
	Plugin string
	span
	O         traffic.Overview
	Devices   []deviceTotalRow
	Peers     []traffic.PeerTotal
	Countries []traffic.CountryTotal
	Map       worldmap.Map
	// MapErr says why there is no map (no home country, no data).
	MapErr string
}

// span is the range a Traffic or DNS page shows: one of trafficRanges
// ending now, or since and until dates.
type span struct {
	Range     string
	Ranges    []rangeOption
	Since     time.Time
	Until     time.Time
	SinceForm string
	UntilForm string
}

// spanOf reads a page's range from its query (range, or since and
// until; the last 24 hours when none), as GET /api/traffic does.
func (s *Server) spanOf(q query, path string) (span, error) {
	v := span{Range: q.str("range")}
	now := s.now().UTC()
	v.Until = now
	custom := q.str("since") != "" || q.str("until") != ""
	switch {
	case custom && v.Range != "":
		return v, errBadRequest("Give either a range or since and until, not both.")
	case custom:
		since, err := q.time("since", s.cfg.Location, false)
		if err != nil {
			return v, err
		}
		until, err := q.time("until", s.cfg.Location, true)
		if err != nil {
			return v, err
		}
		if until != nil {
			v.Until = until.UTC()
		}
		v.Since = v.Until.Add(-24 * time.Hour)
		if since != nil {
			v.Since = since.UTC()
		}
		if !v.Since.Before(v.Until) {
			return v, errBadRequest("The start of the range must be before its end.")
		}
		if v.Until.Sub(v.Since) > maxTrafficRange {
			return v, errBadRequest("The range is longer than 400 days: narrow since and until.")
		}
	default:
		if v.Range == "" {
			v.Range = "24h"
		}
		found := false
		for _, rg := range trafficRanges {
			if rg.Key == v.Range {
				v.Since, found = now.Add(-rg.D), true
			}
		}
		if !found {
			return v, errBadRequest("The range must be 1h, 24h, 7d or 30d.")
		}
	}
	for _, rg := range trafficRanges {
		v.Ranges = append(v.Ranges, rangeOption{Key: rg.Key, Label: rg.Label, URL: path + "?range=" + url.QueryEscape(rg.Key), Current: rg.Key == v.Range})
	}
	v.SinceForm = v.Since.In(s.cfg.Location).Format("2006-01-02")
	// The last day the range includes (a date as until is the end of that
	// day), so the form sends back the same range.
	v.UntilForm = v.Until.Add(-time.Nanosecond).In(s.cfg.Location).Format("2006-01-02")
	return v, nil
}

type rangeOption struct {
	Key, Label, URL string
	Current         bool
}

type deviceTotalRow struct {
	traffic.DeviceTotal
	Name string
}

func (s *Server) trafficPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "range", "since", "until")
	if err != nil {
		return err
	}
	if s.flows == nil {
		s.render(w, r, http.StatusOK, "traffic", trafficView{Off: true, Plugin: noTrafficPlugin})
		return nil
	}
	v := trafficView{}
	if v.span, err = s.spanOf(q, "/traffic"); err != nil {
		return err
	}
	ctx := r.Context()
	v.O, err = s.flows.Overview(ctx, v.Since, v.Until, trafficMapTop)
	if err != nil {
		return err
	}
	v.Countries = v.O.Countries[:min(trafficTop, len(v.O.Countries))]
	v.Peers = v.O.Peers[:min(trafficTop, len(v.O.Peers))]
	for _, d := range v.O.Devices[:min(trafficTop, len(v.O.Devices))] {
		v.Devices = append(v.Devices, deviceTotalRow{DeviceTotal: d, Name: s.deviceName(ctx, d.DeviceID)})
	}
	flows := make([]worldmap.Flow, 0, len(v.O.Countries))
	for _, c := range v.O.Countries {
		if c.Country == "" {
			continue
		}
		b := c.BytesIn + c.BytesOut
		flows = append(flows, worldmap.Flow{Country: c.Country, Bytes: b,
			Title: v.O.Home + " ↔ " + c.Country + ": " + fmtBytes(b) + " (" + fmtBytes(c.BytesOut) + " out, " + fmtBytes(c.BytesIn) + " in)"})
	}
	v.Map, err = worldmap.Layout(v.O.Home, flows)
	switch {
	case err != nil:
		s.log.Error().Err(err).Msg("ui: world map unavailable")
		v.MapErr = "The world map is not in this build (make worldmap)."
	case v.O.Home == "":
		v.MapErr = "Set location.country (your country's ISO code, e.g. DE) to draw lines from home: no router plugin has read a public outside address to derive it from (behind carrier-grade NAT there is none)."
	case !v.Map.HasHome:
		v.MapErr = "The home country " + v.O.Home + " (" + v.O.HomeFrom + ") is not a country the map knows."
	}
	s.render(w, r, http.StatusOK, "traffic", v)
	return nil
}

// deviceName is a device's name for a list, or its id when the inventory
// no longer has it.
func (s *Server) deviceName(ctx context.Context, id string) string {
	if d, err := s.inv.Device(ctx, id); err == nil && d.Name != "" {
		return d.Name
	}
	return id
}

// devicePeers is the device page's top peers of the last day, nil when
// traffic is not recorded.
func (s *Server) devicePeers(ctx context.Context, id string) (*peersView, error) {
	if s.flows == nil {
		return nil, nil
	}
	until := s.now().UTC()
	page, err := s.flows.DeviceTraffic(ctx, id, traffic.Filter{Since: until.Add(-devicePeersRange), Until: until, By: traffic.ByPeer, Limit: devicePeersTop})
	if err != nil {
		return nil, err
	}
	return &peersView{Items: page.Items, More: page.NextCursor != nil}, nil
}

// peersView is the device page's Traffic section.
type peersView struct {
	Items []traffic.Item
	More  bool
}
