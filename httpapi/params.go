package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"
)

// Limits of query parameters.
const (
	defaultLimit  = 100
	maxLimit      = 1000
	maxQueryText  = 256  // q, group, source, device
	maxCursorSize = 1024 // cursors are opaque but short
	maxIDSize     = 256
)

// deviceID returns the {id} path variable. An id that no device can have
// (empty, too long, not URL-safe) is answered like an unknown one.
func deviceID(r *http.Request) (string, error) {
	id := mux.Vars(r)["id"]
	if id == "" || len(id) > maxIDSize {
		return "", errDeviceNotFound(id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return "", errDeviceNotFound(id)
		}
	}
	return id, nil
}

// query reads the query parameters of one request strictly: a parameter
// the endpoint does not take, a repeated parameter that is not
// repeatable, an empty value (q excepted) or a malformed value is a 400
// naming it. Every problem is collected; err returns them as one problem,
// sorted by parameter name.
type query struct {
	vals url.Values
	errs []fieldError
}

// parseQuery checks the parameter names against allowed (name →
// repeatable). A query string that does not decode is a 400 on its own.
func parseQuery(r *http.Request, allowed map[string]bool) (*query, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, queryError(badQueryPair(r.URL.RawQuery),
			"does not decode: write the query as name=value pairs joined by &, with %, &, ;, + and = in values percent-encoded")
	}
	q := &query{vals: vals}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		repeatable, ok := allowed[k]
		switch {
		case !ok:
			q.fail(k, "unknown parameter: this endpoint takes "+listNames(allowed))
		case !repeatable && len(vals[k]) > 1:
			q.fail(k, fmt.Sprintf("given %d times: give it once", len(vals[k])))
		}
	}
	return q, nil
}

// badQueryPair names the first parameter of a query string that
// url.ParseQuery refuses (its raw name when the name itself is bad).
func badQueryPair(raw string) string {
	for _, pair := range strings.Split(raw, "&") {
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || strings.Contains(k, ";") {
			return k
		}
		if _, err := url.QueryUnescape(v); err != nil || strings.Contains(v, ";") {
			if name == "" {
				return pair
			}
			return name
		}
	}
	return raw
}

func listNames(allowed map[string]bool) string {
	if len(allowed) == 0 {
		return "no parameters"
	}
	names := make([]string, 0, len(allowed))
	for k := range allowed {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func (q *query) fail(param, detail string) {
	q.errs = append(q.errs, fieldError{Parameter: &param, Detail: detail})
}

// err returns the collected problems as one 400, or nil.
func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(q.errs, func(a, b fieldError) int { return strings.Compare(*a.Parameter, *b.Parameter) })
	p := queryError(*q.errs[0].Parameter, q.errs[0].Detail)
	if len(q.errs) > 1 {
		p.Detail = fmt.Sprintf("%d query parameters are not valid (see errors); first, %s", len(q.errs), p.Detail)
	}
	p.Errors = q.errs
	return p
}

// raw returns the value of a single parameter; ok is false when it is
// absent or already failed.
func (q *query) raw(name string) (string, bool) {
	vs := q.vals[name]
	if len(vs) != 1 {
		return "", false
	}
	return vs[0], true
}

// text reads a free-text parameter of at most maxQueryText characters.
// emptyOK allows "" (meaning no filter).
func (q *query) text(name string, emptyOK bool) string {
	v, ok := q.raw(name)
	if !ok {
		return ""
	}
	switch {
	case v == "" && !emptyOK:
		q.fail(name, "empty: give a value or leave the parameter out")
	case !utf8.ValidString(v):
		q.fail(name, "not valid UTF-8")
	case utf8.RuneCountInString(v) > maxQueryText:
		q.fail(name, fmt.Sprintf("longer than %d characters", maxQueryText))
	default:
		return v
	}
	return ""
}

// oneOf reads a parameter that must be one of choices.
func (q *query) oneOf(name string, choices ...string) string {
	v, ok := q.raw(name)
	if !ok {
		return ""
	}
	if !slices.Contains(choices, v) {
		q.fail(name, fmt.Sprintf("%q is not allowed: use one of %s", v, strings.Join(choices, ", ")))
		return ""
	}
	return v
}

// boolean reads true or false.
func (q *query) boolean(name string) *bool {
	switch v := q.oneOf(name, "true", "false"); v {
	case "true", "false":
		b := v == "true"
		return &b
	}
	return nil
}

// limit reads limit: a whole number from 1 to maxLimit, default
// defaultLimit.
func (q *query) limit() int {
	v, ok := q.raw("limit")
	if !ok {
		return defaultLimit
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit || v[0] == '+' || v[0] == '0' {
		q.fail("limit", fmt.Sprintf("%q is not allowed: use a whole number from 1 to %d (default %d)", v, maxLimit, defaultLimit))
		return defaultLimit
	}
	return n
}

// cursor reads an opaque cursor (next_cursor of an earlier page).
func (q *query) cursor() string {
	v, ok := q.raw("cursor")
	if !ok {
		return ""
	}
	if v == "" || len(v) > maxCursorSize {
		q.fail("cursor", "not a cursor: pass next_cursor from the previous page unchanged, or leave cursor out to start over")
		return ""
	}
	return v
}

// time reads an RFC 3339 time and returns it in UTC.
func (q *query) time(name string) *time.Time {
	v, ok := q.raw(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		d := fmt.Sprintf("%q is not an RFC 3339 time: use e.g. 2026-01-02T15:04:05Z", v)
		if strings.Contains(v, " ") {
			d += " (a + in an offset must be sent as %2B)"
		}
		q.fail(name, d)
		return nil
	}
	t = t.UTC()
	return &t
}

// timeRange reads since and until and checks their order.
func (q *query) timeRange() (since, until *time.Time) {
	since, until = q.time("since"), q.time("until")
	if since != nil && until != nil && until.Before(*since) {
		q.fail("until", "earlier than since: give until at or after since")
	}
	return since, until
}

// prefix reads a CIDR prefix (masked: 192.168.1.7/24 means 192.168.1.0/24).
func (q *query) prefix(name string) *netip.Prefix {
	v, ok := q.raw(name)
	if !ok {
		return nil
	}
	p, err := netip.ParsePrefix(v)
	if err != nil || p.Addr().Zone() != "" {
		q.fail(name, fmt.Sprintf("%q is not a CIDR prefix: use e.g. 192.168.1.0/24 or fd00::/64", v))
		return nil
	}
	p = p.Masked()
	return &p
}

// kinds reads the repeatable kind parameter; each value must be a
// change-log kind.
func (q *query) kinds(known []string) []string {
	var out []string
	for _, v := range q.vals["kind"] {
		if !slices.Contains(known, v) {
			q.fail("kind", fmt.Sprintf("%q is not a change-log kind: use one of %s", v, strings.Join(known, ", ")))
			continue
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
