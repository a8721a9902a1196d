package dnsfilter2

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// logPage is a reply of GET /control/querylog.
type logPage struct {
	Data []entry `json:"data"`
	// Oldest is the time of the last entry returned (or of the oldest log
	// line scanned), to pass back verbatim as older_than; "" when there
	// is nothing more.
	Oldest string `json:"oldest"`
}

type entry struct {
	Time     string `json:"time"`
	Client   string `json:"client"`
	Question struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"question"`
	Reason string   `json:"reason"`
	Answer []answer `json:"answer"`
}

type answer struct {
	Type string `json:"type"`
	// Value is kept raw: only A and AAAA values, JSON strings, are read
	// (others may be objects).
	Value json.RawMessage `json:"value"`
}

// parseLog decodes a reply of /control/querylog.
func parseLog(body []byte) (*logPage, error) {
	if p, err := fastLog(body); err == nil {
		return p, nil
	}
	return parseLogJSON(body)
}

// parseLogJSON decodes a page with encoding/json: the reference for
// fastLog, and what reports a malformed page.
func parseLogJSON(body []byte) (*logPage, error) {
	var p logPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("querylog: malformed reply: %s", peerhttp.Clean(err.Error()))
	}
	return &p, nil
}

// at is the entry's time in UTC (it is written with the server's zone
// offset and nanoseconds).
func (e *entry) at() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// key tells entries at the same time apart (no ids exist).
func (e *entry) key() uint64 {
	return sources.DNSEntryKey(e.Client, e.Question.Name, e.Question.Type, e.Reason)
}

func (e *entry) client() netip.Addr {
	ip, err := netip.ParseAddr(e.Client)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}

// blocked reports a filtering reason that blocked the query.
func (e *entry) blocked() bool {
	switch e.Reason {
	case "FilteredBlackList", "FilteredSafeBrowsing", "FilteredParental", "FilteredInvalid", "FilteredBlockedService":
		return true
	}
	return false
}

// answers are the A and AAAA values of the answer.
func (e *entry) answers(buf []netip.Addr) []netip.Addr {
	buf = buf[:0]
	for _, a := range e.Answer {
		if a.Type != "A" && a.Type != "AAAA" {
			continue
		}
		v := a.Value
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			continue
		}
		if ip, err := netip.ParseAddr(strings.TrimSpace(string(v[1 : len(v)-1]))); err == nil {
			buf = append(buf, ip)
		}
	}
	return buf
}
