package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

func requestWithQuery(raw string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/devices", nil)
	r.URL.RawQuery = raw
	return r
}

func wantQueryProblem(t *testing.T, raw string, err error) {
	t.Helper()
	var p *problem
	if !errors.As(err, &p) || p.Status != http.StatusBadRequest || p.Type != problemTypePrefix+slugInvalidQuery {
		t.Fatalf("query %q: error %v is not a 400 invalid-query problem", raw, err)
	}
	if len(p.Errors) == 0 {
		t.Fatalf("query %q: problem names no parameter", raw)
	}
	for _, fe := range p.Errors {
		if fe.Parameter == nil || fe.Pointer != nil {
			t.Fatalf("query %q: bad error entry %+v", raw, fe)
		}
	}
}

// FuzzDeviceQuery: parsing any query string never panics; an error is a
// 400 problem naming parameters; an accepted query gives a filter within
// the documented bounds.
func FuzzDeviceQuery(f *testing.F) {
	for _, s := range []string{
		"", "q=nas&limit=5", "presence=quiet&sort=-ip", "network=10.0.0.0/8&watched=true&ignored=false",
		"limit=0", "limit=1&limit=2", "x=1", "%zz", "q=%ff", "a;b", "cursor=abc&group=lab", "=%zz&q",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		flt, err := parseDeviceFilter(requestWithQuery(raw))
		if err != nil {
			wantQueryProblem(t, raw, err)
			return
		}
		if flt.Limit < 1 || flt.Limit > maxLimit || !slices.Contains(deviceSorts, flt.Sort) {
			t.Fatalf("query %q gave %+v", raw, flt)
		}
		if flt.Presence != "" && !slices.Contains([]string{projections.PresenceOnline, projections.PresenceOffline, projections.PresenceQuiet}, flt.Presence) {
			t.Fatalf("presence %q", flt.Presence)
		}
		if flt.Network != nil && flt.Network.Masked() != *flt.Network {
			t.Fatalf("network %s not masked", flt.Network)
		}
		if vals, err := url.ParseQuery(raw); err != nil || len(vals["q"]) > 1 {
			t.Fatalf("accepted query %q that does not parse once", raw)
		}
	})
}

// FuzzEventQuery does the same for the change log and scans.
func FuzzEventQuery(f *testing.F) {
	for _, s := range []string{"kind=device.online&kind=device.quiet", "since=2026-01-01T00:00:00Z&until=2025-01-01T00:00:00Z", "device=x&limit=1000", "source=s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := requestWithQuery(raw)
		ef, err := parseEventFilter(r, "")
		if err != nil {
			wantQueryProblem(t, raw, err)
		} else if ef.Since != nil && ef.Until != nil && ef.Until.Before(*ef.Since) {
			t.Fatalf("accepted until before since: %q", raw)
		} else {
			for _, k := range ef.Kinds {
				if !slices.Contains(changeKinds, k) {
					t.Fatalf("accepted kind %q", k)
				}
			}
		}
		if _, err := parseScanFilter(r); err != nil {
			wantQueryProblem(t, raw, err)
		}
	})
}
