package dnsfilter1

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// queriesPage is a reply of GET /api/queries.
type queriesPage struct {
	Queries []entry `json:"queries"`
	// Cursor is the request's cursor, else the largest id the server
	// holds; null when the privacy level hides every query.
	Cursor       *uint64 `json:"cursor"`
	RecordsTotal int     `json:"recordsTotal"`
}

type entry struct {
	ID     uint64  `json:"id"`
	Time   float64 `json:"time"`
	Type   string  `json:"type"`
	Domain string  `json:"domain"`
	Status *string `json:"status"`
	Client struct {
		IP string `json:"ip"`
	} `json:"client"`
}

// parseQueries decodes a reply of /api/queries.
func parseQueries(body []byte) (*queriesPage, error) {
	var p queriesPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("queries: malformed reply: %s", peerhttp.Clean(err.Error()))
	}
	return &p, nil
}

// at is the entry's time; ok is false for a time that is not one.
func (e *entry) at() (time.Time, bool) {
	if e.Time <= 0 || math.IsNaN(e.Time) || math.IsInf(e.Time, 0) || e.Time > 1e11 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(e.Time)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1000).UTC(), true
}

func (e *entry) client() netip.Addr {
	ip, err := netip.ParseAddr(e.Client.IP)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}

// blocked reports a status that says the server blocked the query
// (gravity, regex and deny lists, their CNAME variants, upstream
// blocking, special domains).
func blocked(status *string) bool {
	if status == nil {
		return false
	}
	switch *status {
	case "GRAVITY", "REGEX", "DENYLIST", "EXTERNAL_BLOCKED_IP", "EXTERNAL_BLOCKED_NULL", "EXTERNAL_BLOCKED_NXRA",
		"GRAVITY_CNAME", "REGEX_CNAME", "DENYLIST_CNAME", "SPECIAL_DOMAIN":
		return true
	}
	return false
}

// authReply is a reply of POST /api/auth.
type authReply struct {
	Session struct {
		Valid bool    `json:"valid"`
		SID   *string `json:"sid"`
	} `json:"session"`
}

// errorReply is the error shape of every endpoint.
type errorReply struct {
	Error *struct {
		Key     string  `json:"key"`
		Message string  `json:"message"`
		Hint    *string `json:"hint"`
	} `json:"error"`
}
