package ui

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// query reads a page's query parameters: each known once at most, no
// unknown one (a 400 names it, as the API does). An empty value counts as
// absent, since forms send empty fields.
type query struct {
	v     url.Values
	known map[string]bool
}

func newQuery(r *http.Request, known ...string) (query, error) {
	q := query{v: r.URL.Query(), known: map[string]bool{}}
	for _, k := range known {
		q.known[k] = true
	}
	for k, vs := range q.v {
		if !q.known[k] {
			return q, errBadRequest("Unknown query parameter " + strconv.Quote(k) + "; this page takes " + strings.Join(known, ", ") + ".")
		}
		if len(vs) > 1 && k != "kind" {
			return q, errBadRequest("The query parameter " + strconv.Quote(k) + " is given more than once.")
		}
	}
	return q, nil
}

func (q query) str(k string) string { return strings.TrimSpace(q.v.Get(k)) }

func (q query) boolean(k string) (*bool, error) {
	switch q.str(k) {
	case "":
		return nil, nil
	case "true", "yes", "1":
		t := true
		return &t, nil
	case "false", "no", "0":
		f := false
		return &f, nil
	}
	return nil, errBadRequest("The query parameter " + strconv.Quote(k) + " must be true or false.")
}

func (q query) limit(def int) (int, error) {
	s := q.str("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, errBadRequest("The query parameter \"limit\" must be a number from 1 to 1000.")
	}
	return n, nil
}

// time reads k: an RFC 3339 time, or a date or date and minute in loc
// (the zone the pages show times in). With endOfDay, as for an until, a
// bare date means the end of that day, so that the day is included.
func (q query) time(k string, loc *time.Location, endOfDay bool) (*time.Time, error) {
	s := q.str(k)
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return &t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04", s, loc); err == nil {
		return &t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		if endOfDay {
			t = t.AddDate(0, 0, 1) // the day itself included
		}
		return &t, nil
	}
	return nil, errBadRequest("The query parameter " + strconv.Quote(k) + " must be a date (2006-01-02) or an RFC 3339 time.")
}

var sorts = map[string]bool{"name": true, "ip": true, "first_seen": true, "last_seen": true}

// deviceFilter reads the devices page's filters.
func deviceFilter(q query) (projections.DeviceFilter, error) {
	f := projections.DeviceFilter{Q: q.str("q"), Group: q.str("group"), Presence: q.str("presence"), Sort: q.str("sort"), Cursor: q.str("cursor")}
	switch f.Presence {
	case "", projections.PresenceOnline, projections.PresenceOffline, projections.PresenceQuiet:
	default:
		return f, errBadRequest("Presence must be online, offline or quiet.")
	}
	if f.Sort != "" && !sorts[strings.TrimPrefix(f.Sort, "-")] {
		return f, errBadRequest("Sort by name, ip, first_seen or last_seen (a leading - sorts descending).")
	}
	if n := q.str("network"); n != "" {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return f, errBadRequest("The network must be a CIDR prefix such as 192.168.1.0/24.")
		}
		p = p.Masked()
		f.Network = &p
	}
	var err error
	if f.Watched, err = q.boolean("watched"); err != nil {
		return f, err
	}
	if f.Ignored, err = q.boolean("ignored"); err != nil {
		return f, err
	}
	if f.Limit, err = q.limit(100); err != nil {
		return f, err
	}
	return f, nil
}
