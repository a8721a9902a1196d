package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jocasta/jocasta/projections"
)

type statusBody struct {
	Status string `json:"status"`
}

// livez answers while the process serves HTTP.
func (s *server) livez(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	return writeJSON(w, r, http.StatusOK, statusBody{Status: "ok"})
}

// readyz answers 200 once the projections have caught up with the log,
// 503 (with Retry-After) before, and 503 again whenever Readiness says
// the service is not fit to serve (a failed database, a damaged log),
// with its ReadinessDetail as the detail.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	if !s.ready.Ready() {
		detail := ""
		if d, ok := s.ready.(ReadinessDetail); ok {
			detail = d.NotReadyDetail()
		}
		return errNotReady(detail)
	}
	return writeJSON(w, r, http.StatusOK, statusBody{Status: "ready"})
}

// openapi serves the OpenAPI 3.1 document of this API.
func (s *server) openapi(w http.ResponseWriter, r *http.Request) error {
	if err := noQuery(r); err != nil {
		return err
	}
	writeBody(w, r, http.StatusOK, contentTypeJSON, s.spec)
	return nil
}

func (s *server) stats(w http.ResponseWriter, r *http.Request) error {
	if hasAt(r) {
		return s.statsAt(w, r)
	}
	if err := noQuery(r); err != nil {
		return err
	}
	st, err := s.inv.Stats(r.Context())
	if err != nil {
		return fmt.Errorf("httpapi: reading stats: %w", err)
	}
	return writeJSON(w, r, http.StatusOK, statsOut(st))
}

var groupParams = map[string]bool{"limit": false, "cursor": false}

// groups answers the groups in use, by name, as a list page. The whole
// set comes from the Inventory; paging happens here: the cursor is the
// base64url of "g" and the last name of the previous page.
func (s *server) groups(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, groupParams)
	if err != nil {
		return err
	}
	limit, cursor := q.limit(), q.cursor()
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) == 0 || b[0] != 'g' {
			q.fail("cursor", "not a cursor: pass next_cursor from the previous page unchanged, or leave cursor out to start over")
		}
		after = string(b[min(1, len(b)):])
	}
	if err := q.err(); err != nil {
		return err
	}
	gs, err := s.inv.Groups(r.Context())
	if err != nil {
		return fmt.Errorf("httpapi: listing groups: %w", err)
	}
	gs = slices.Clone(gs)
	slices.SortFunc(gs, func(a, b projections.Group) int { return strings.Compare(a.Name, b.Name) })
	start := 0
	if cursor != "" {
		start, _ = slices.BinarySearchFunc(gs, after, func(g projections.Group, name string) int {
			if c := strings.Compare(g.Name, name); c != 0 {
				return c
			}
			return -1 // equal names sort before: start after them
		})
	}
	page := projections.Page[projections.Group]{Items: gs[start:]}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		next := base64.RawURLEncoding.EncodeToString([]byte("g" + page.Items[limit-1].Name))
		page.NextCursor = &next
	}
	if page.Items == nil {
		page.Items = []projections.Group{}
	}
	return writeJSON(w, r, http.StatusOK, page)
}
