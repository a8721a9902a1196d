package dnsnode

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/internal/peerhttp"
)

// envelope is every reply: HTTP 200 with a status.
type envelope struct {
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage"`
	Response     json.RawMessage `json:"response"`
}

type appsList struct {
	Apps []struct {
		Name    string `json:"name"`
		DNSApps []struct {
			ClassPath   string `json:"classPath"`
			IsQueryLogs bool   `json:"isQueryLogs"`
		} `json:"dnsApps"`
	} `json:"apps"`
}

// logPage is the response of /api/logs/query.
type logPage struct {
	PageNumber   int64   `json:"pageNumber"`
	TotalPages   int64   `json:"totalPages"`
	TotalEntries int64   `json:"totalEntries"`
	Entries      []entry `json:"entries"`
}

type entry struct {
	Timestamp    string  `json:"timestamp"`
	Client       string  `json:"clientIpAddress"`
	Protocol     string  `json:"protocol"`
	ResponseType string  `json:"responseType"`
	RCode        string  `json:"rcode"`
	QName        *string `json:"qname"`
	QType        *string `json:"qtype"`
	Answer       *string `json:"answer"`
}

// parseLog decodes the response of /api/logs/query (inside the envelope).
func parseLog(b []byte) (*logPage, error) {
	var p logPage
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("logs/query: malformed reply: %s", peerhttp.Clean(err.Error()))
	}
	return &p, nil
}

// at is the entry's time in UTC. The server writes ISO 8601; a time with
// an offset is in that zone (a server writing its own zone), one with
// neither offset nor Z is UTC, as the server takes its own parameters.
func (e *entry) at() (time.Time, bool) {
	s := strings.TrimSpace(e.Timestamp)
	for _, layout := range [...]string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// key tells entries at the same time apart (rowNumber is not stable).
func (e *entry) key() uint64 {
	return sources.DNSEntryKey(e.Client, str(e.QName), str(e.QType), e.RCode, e.Protocol, e.ResponseType)
}

func (e *entry) client() netip.Addr {
	ip, err := netip.ParseAddr(e.Client)
	if err != nil {
		return netip.Addr{}
	}
	return ip
}

// blocked reports a response the server (or its upstream) blocked.
func (e *entry) blocked() bool {
	switch strings.ToLower(e.ResponseType) {
	case "blocked", "upstreamblocked", "cacheblocked":
		return true
	}
	return false
}

// answers are the addresses among the answer's records, which the
// server joins into one text ("1.2.3.4, 5.6.7.8", or with record types).
func (e *entry) answers(buf []netip.Addr) []netip.Addr {
	buf = buf[:0]
	s := str(e.Answer)
	for len(s) > 0 {
		i := strings.IndexAny(s, ", ;\t")
		tok := s
		if i >= 0 {
			tok, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if tok == "" {
			continue
		}
		if ip, err := netip.ParseAddr(tok); err == nil {
			buf = append(buf, ip)
		}
	}
	return buf
}
