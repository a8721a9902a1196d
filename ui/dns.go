package ui

import (
	"context"
	"net/http"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
)

// DNS is the DNS lookups read model (projections/dns), the same the
// API's /api/devices/{id}/dns and /timeline read. TopLookups and
// DeviceHours return projections.ErrNotFound for an unknown device.
type DNS interface {
	TopLookups(ctx context.Context, device string, since, until time.Time, limit int) (dns.Top, error)
	// DeviceHours is the device's lookups summed per hour, newest hour
	// first (the Timeline's DNS entries).
	DeviceHours(ctx context.Context, id string, f dns.HourFilter) (projections.Page[dns.HourTotal], error)
}

// Limits of the DNS page and the device page's DNS section.
const (
	dnsTop        = 20
	deviceDNSTop  = 10
	deviceDNSSpan = 24 * time.Hour
	// noDNSPlugins are the plugin kinds that would fill the page (the
	// API's 404 names the same).
	noDNSPlugins = "dnsnode, dnsfilter1 or dnsfilter2"
)

// dnsView is the DNS page.
type dnsView struct {
	Off     bool
	Plugins string
	span
	T       dns.Top
	Clients []clientRow
}

type clientRow struct {
	dns.ClientTotal
	Name string
}

func (v dnsView) PageTitle() string { return "DNS lookups" }

func (s *Server) dnsPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, "range", "since", "until")
	if err != nil {
		return err
	}
	if s.dns == nil {
		s.render(w, r, http.StatusOK, "dns", dnsView{Off: true, Plugins: noDNSPlugins})
		return nil
	}
	v := dnsView{}
	if v.span, err = s.spanOf(q, "/dns"); err != nil {
		return err
	}
	ctx := r.Context()
	if v.T, err = s.dns.TopLookups(ctx, "", v.Since, v.Until, dnsTop); err != nil {
		return err
	}
	for _, c := range v.T.Clients {
		row := clientRow{ClientTotal: c, Name: c.Client}
		if c.DeviceID != "" {
			row.Name = s.deviceName(ctx, c.DeviceID)
		}
		v.Clients = append(v.Clients, row)
	}
	s.render(w, r, http.StatusOK, "dns", v)
	return nil
}

// deviceDNS is the device page's top domains of the last day, nil when
// no lookups are recorded.
func (s *Server) deviceDNS(ctx context.Context, id string) (*dns.Top, error) {
	if s.dns == nil {
		return nil, nil
	}
	until := s.now().UTC()
	t, err := s.dns.TopLookups(ctx, id, until.Add(-deviceDNSSpan), until, deviceDNSTop)
	if err != nil {
		return nil, err
	}
	return &t, nil
}
