package ui_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/ui"
)

// timelineRowRE matches a row of the device page's Timeline: its class,
// time, kind, summary and by.
var timelineRowRE = regexp.MustCompile(`<tr class="tl-(\w+)"><td>([^<]*)</td><td><span class="kind">([^<]*)</span></td><td>([^<]*)</td><td>([^<]*)</td></tr>`)

// timelineRows are the Timeline's rows of a device page, one line each:
// "time|kind|summary|by".
func timelineRows(t *testing.T, body string) []string {
	t.Helper()
	i := strings.Index(body, `id="h-timeline"`)
	if i < 0 {
		t.Fatalf("the device page has no Timeline section:\n%.3000s", body)
	}
	sec := body[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	var out []string
	for _, m := range timelineRowRE.FindAllStringSubmatch(sec, -1) {
		out = append(out, html.UnescapeString(strings.Join(m[2:], "|")))
	}
	return out
}

// olderRE is the Timeline's link to its next page.
var olderRE = regexp.MustCompile(`<a href="([^"]*)" id="t-older">`)

func TestDeviceTimeline(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no zone data: %v", err)
	}
	s, c := seeded(t, stackOpts{cfg: ui.Config{Location: berlin}, traffic: true, dns: true})
	id := s.deviceID("10.0.0.1")
	s.flowWindow(t0.Add(-30*time.Minute),
		events.TrafficRow{Src: "10.0.0.1", Dst: "8.8.8.8", Proto: 6, Port: 443, Bytes: 40_000_000, Packets: 4, Flows: 2},
		events.TrafficRow{Src: "8.8.8.8", Dst: "10.0.0.1", Proto: 6, Port: 443, Bytes: 2_000_000, Packets: 4, Flows: 2})
	s.dnsRead(t0.Add(-5*time.Minute), events.DNSRow{Hour: t0.Add(-time.Hour).Unix(), Client: "10.0.0.1", Lookups: []events.DNSLookup{
		{Domain: "ads.tracker.example", Count: 40, Blocked: 40}, {Domain: "printer-vendor.example", Count: 12}}})
	wantStatus(t, c.post("/devices/"+id, url.Values{"label": {"office printer"}}), http.StatusSeeOther)

	// One list, newest first, times in location.timezone; at one time
	// traffic, then DNS, then changes.
	want := []string{
		`2026-03-10 10:00:00 CET|device.edited|ada set the label of printer.lan to "office printer"|api (ada)`,
		"2026-03-10 09:00:00 CET|traffic.hour|↓ 2.0 MB ↑ 40.0 MB, 4 flows|flows",
		"2026-03-10 09:00:00 CET|dns.hour|52 lookups, 40 blocked: ads.tracker.example, printer-vendor.example|dns",
		"2026-03-10 08:00:00 CET|device.discovered|printer.lan (10.0.0.1) was discovered by sweep:lab|sweep:lab",
	}
	w := c.get("/devices/" + id)
	wantStatus(t, w, http.StatusOK, `id="h-timeline">Timeline, last 7 days<`, `<svg class="strip"`, `id="h-changes"`,
		"from 2026-03-03 10:00:00 CET to 2026-03-10 10:00:00 CET")
	if got := timelineRows(t, w.Body.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if olderRE.MatchString(w.Body.String()) {
		t.Error("an Older link on a timeline that fits one page")
	}

	// Paged by one, through the Older links: the same entries, each
	// page with a link back to the newest.
	t.Run("paging", func(t *testing.T) {
		var got []string
		next := "/devices/" + id + "?limit=1&since=2026-03-01"
		for pages := 0; next != ""; pages++ {
			if pages > len(want) {
				t.Fatalf("more than %d pages: %q", len(want), got)
			}
			w := c.get(next)
			wantStatus(t, w, http.StatusOK)
			body := w.Body.String()
			rows := timelineRows(t, body)
			if len(rows) != 1 {
				t.Fatalf("page %d (%s): %d rows, want 1", pages, next, len(rows))
			}
			got = append(got, rows...)
			if pages > 0 && !strings.Contains(body, `href="/devices/`+id+`?limit=1&amp;since=2026-03-01#h-timeline">« Newest`) {
				t.Errorf("page %d has no link to the newest entries", pages)
			}
			next = ""
			if m := olderRE.FindStringSubmatch(body); m != nil {
				next = html.UnescapeString(m[1])
				if !strings.Contains(next, "since=2026-03-01") || !strings.HasSuffix(next, "#h-timeline") {
					t.Errorf("Older link %q does not keep the range and section", next)
				}
				next = strings.TrimSuffix(next, "#h-timeline")
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("paged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("range", func(t *testing.T) {
		// A day as since and until is that whole day (in the zone).
		w := c.get("/devices/" + id + "?since=2026-03-10&until=2026-03-10")
		wantStatus(t, w, http.StatusOK, `id="h-timeline">Timeline<`, `value="2026-03-10"`)
		if got := timelineRows(t, w.Body.String()); len(got) != len(want) {
			t.Errorf("the day of the entries: %q", got)
		}
		w = c.get("/devices/" + id + "?until=2026-03-09")
		wantStatus(t, w, http.StatusOK, "Nothing recorded in this range.")
		w = c.get("/devices/" + id + "?since=2026-03-10T08:30:00Z")
		// A time of day shows as its day in the date field.
		wantStatus(t, w, http.StatusOK, `id="t-since" name="since" type="date" value="2026-03-10"`, `id="t-until" name="until" type="date" value=""`)
		if got := timelineRows(t, w.Body.String()); len(got) != 1 || !strings.Contains(got[0], "device.edited") {
			t.Errorf("since 08:30 UTC: %q, want the edit only", got)
		}
		for _, q := range []struct{ query, msg string }{
			{"since=2026-03-11", "must be before"},
			{"since=2026-03-10&until=2026-03-01", "must be before"},
			{"since=2024-01-01", "longer than 400 days"},
			{"since=yesterday", "must be a date"},
			{"cursor=bogus", "cursor is not one this page gave"},
			{"limit=0", "limit"},
			{"at=2026-03-10", "Unknown query parameter"},
		} {
			wantStatus(t, c.get("/devices/"+id+"?"+q.query), http.StatusBadRequest, q.msg)
		}
	})

	t.Run("unknown and merged devices", func(t *testing.T) {
		wantStatus(t, c.get("/devices/dnope?since=2026-03-01"), http.StatusNotFound)
		nas := s.deviceID("10.0.0.2")
		wantStatus(t, c.post("/devices/"+id+"/merge", url.Values{"device": {nas}}), http.StatusSeeOther)
		wantStatus(t, c.get("/devices/"+nas+"?since=2026-03-01"), http.StatusOK, "was merged into", `href="/devices/`+id+`"`)
		// The device's timeline now has the merge and the member's entries.
		w := c.get("/devices/" + id)
		rows := strings.Join(timelineRows(t, w.Body.String()), "\n")
		for _, s := range []string{"device.merged", "nas.lan (10.0.0.2) was discovered"} {
			if !strings.Contains(rows, s) {
				t.Errorf("merged timeline lacks %q:\n%s", s, rows)
			}
		}
	})
}

// Without traffic and DNS models the Timeline lists the changes only.
func TestDeviceTimelineChangesOnly(t *testing.T) {
	s, c := seeded(t, stackOpts{})
	w := c.get("/devices/" + s.deviceID("10.0.0.3"))
	wantStatus(t, w, http.StatusOK)
	got := timelineRows(t, w.Body.String())
	if len(got) < 2 || !strings.Contains(got[0], "device.") || !strings.Contains(got[len(got)-1], "device.discovered") {
		t.Fatalf("timeline %q, want its changes ending with the discovery", got)
	}
	for _, r := range got {
		if strings.Contains(r, ".hour|") {
			t.Errorf("an hourly entry with nothing recorded: %q", r)
		}
	}
}
