package ui

import (
	"bytes"
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events/command"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
)

// devicesView is the Devices page.
type devicesView struct {
	Stats  projections.Stats
	Groups []projections.Group
	Filter filterView
	// Shown is how many rows the page has; rows are written by
	// writeRows where the template has rowsMarker.
	Shown    int
	rows     []projections.Device
	Columns  []column
	NextURL  string
	FirstURL string
	Return   string
	Updated  string
}

// filterView is the filter form as submitted.
type filterView struct {
	Q, Group, Presence, Network, Watched, Ignored, Sort string
	Active                                              bool
}

type column struct {
	Label, URL, Arrow string
}

// writeRows writes the device table's rows into b. It is the one place
// HTML is written outside a template: html/template evaluates each of a
// row's dozen actions, and its escapers, through reflection, which made
// 100 rows 90% of the page's cost; and the rows go straight into the
// page's buffer (render splices them in at rowsMarker), so a page of
// rows allocates almost nothing. Every value is escaped with
// htmlEscaper (html.EscapeString's replacements: text and quoted
// attributes alike) and the device link with url.PathEscape first;
// TestDeviceRowsEscaped checks it.
func writeRows(b *bytes.Buffer, rows []projections.Device, loc *time.Location) {
	if len(rows) == 0 {
		b.WriteString(`<tr><td colspan="8">No device matches.</td></tr>`)
		return
	}
	b.Grow(len(rows) * 700)
	esc := func(s string) { _, _ = htmlEscaper.WriteString(b, s) }
	for _, d := range rows {
		if d.Ignored {
			b.WriteString(`<tr class="ignored">`)
		} else {
			b.WriteString("<tr>")
		}
		b.WriteString(`<td><input type="checkbox" name="id" value="`)
		esc(d.ID)
		b.WriteString(`" aria-label="Select `)
		esc(d.Name)
		b.WriteString(`"></td><td><a href="/devices/`)
		esc(url.PathEscape(d.ID))
		b.WriteString(`">`)
		esc(d.Name)
		b.WriteString(`</a>`)
		if d.Label != nil {
			b.WriteString(` <span class="label">`)
			esc(*d.Label)
			b.WriteString(`</span>`)
		}
		if d.Watched {
			b.WriteString(` <span class="badge" title="watched">★</span>`)
		}
		b.WriteString(`</td><td class="mono">`)
		esc(currentIP(d))
		b.WriteString(`</td><td>`)
		appendTime(b, d.FirstSeen, loc)
		b.WriteString(`</td><td>`)
		appendTime(b, d.LastSeen, loc)
		b.WriteString(`</td><td class="p-`)
		esc(d.Presence)
		b.WriteString(`">`)
		esc(presenceLabel(d.Presence))
		b.WriteString(`</td><td><span class="mono">`)
		if d.MAC != nil {
			esc(*d.MAC)
		}
		b.WriteString(`</span>`)
		if d.Vendor != nil {
			b.WriteString(`<br><small>`)
			esc(*d.Vendor)
			b.WriteString(`</small>`)
		}
		b.WriteString(`</td><td>`)
		if d.Group != nil {
			esc(*d.Group)
		}
		b.WriteString("</td></tr>\n")
	}
}

// htmlEscaper makes html.EscapeString's replacements, written straight
// into a buffer.
var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `'`, "&#39;", `<`, "&lt;", `>`, "&gt;", `"`, "&#34;", "\r", "&#13;")

// appendTime writes fmtTime(t, loc) into b without allocating.
func appendTime(b *bytes.Buffer, t time.Time, loc *time.Location) {
	if t.IsZero() {
		b.WriteString("—")
		return
	}
	b.Write(t.In(loc).AppendFormat(b.AvailableBuffer(), timeLayout))
}

// spliceRows implements splicer: the rows go where the template wrote
// rowsMarker.
func (v devicesView) spliceRows(b *bytes.Buffer, loc *time.Location) { writeRows(b, v.rows, loc) }

var deviceParams = []string{"q", "group", "presence", "network", "watched", "ignored", "sort", "cursor", "limit", "updated"}

func (s *Server) devicesPage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, deviceParams...)
	if err != nil {
		return err
	}
	f, err := deviceFilter(q)
	if err != nil {
		return err
	}
	ctx := r.Context()
	page, err := s.inv.ListDevices(ctx, f)
	if err != nil {
		return err
	}
	stats, err := s.inv.Stats(ctx)
	if err != nil {
		return err
	}
	groups, err := s.inv.Groups(ctx)
	if err != nil {
		return err
	}
	v := devicesView{
		Stats: stats, Groups: groups,
		Filter: filterView{Q: q.str("q"), Group: q.str("group"), Presence: q.str("presence"), Network: q.str("network"),
			Watched: q.str("watched"), Ignored: q.str("ignored"), Sort: q.str("sort")},
		Shown:  len(page.Items),
		rows:   page.Items,
		Return: r.URL.RequestURI(),
	}
	if n := q.str("updated"); n != "" {
		if k, err := strconv.Atoi(n); err == nil && k >= 0 {
			v.Updated = plural(k, "device", "devices") + " updated."
		}
	}
	v.Filter.Active = v.Filter.Q != "" || v.Filter.Group != "" || v.Filter.Presence != "" || v.Filter.Network != "" || v.Filter.Watched != "" || v.Filter.Ignored != ""
	base := r.URL.Query()
	base.Del("cursor")
	base.Del("updated")
	for _, c := range []struct{ label, key string }{{"Name", "name"}, {"Address", "ip"}, {"First seen", "first_seen"}, {"Last seen", "last_seen"}} {
		col := column{Label: c.label}
		next := c.key
		switch f.Sort {
		case c.key:
			col.Arrow, next = " ▲", "-"+c.key
		case "-" + c.key:
			col.Arrow = " ▼"
		}
		u := cloneValues(base)
		u.Set("sort", next)
		col.URL = "/devices?" + u.Encode()
		v.Columns = append(v.Columns, col)
	}
	if page.NextCursor != nil {
		u := cloneValues(base)
		u.Set("cursor", *page.NextCursor)
		v.NextURL = "/devices?" + u.Encode()
	}
	if f.Cursor != "" {
		v.FirstURL = "/devices?" + base.Encode()
	}
	s.render(w, r, http.StatusOK, "devices", v)
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// currentIP is the device's most recently seen current address.
func currentIP(d projections.Device) string {
	best := -1
	for i, a := range d.Addresses {
		if a.RetiredAt == nil && (best < 0 || a.LastSeen.After(d.Addresses[best].LastSeen)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return d.Addresses[best].IP
}

// maxBulk bounds one bulk edit.
const maxBulk = 1000

// bulkEdit sets group, ignored and watch on the checked devices.
func (s *Server) bulkEdit(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		return errBadRequest("No device was selected. Tick the devices to change, then apply.")
	}
	if len(ids) > maxBulk {
		return errBadRequest("At most 1000 devices can be changed at once.")
	}
	var edit command.DeviceEdit
	switch g := strings.TrimSpace(r.PostForm.Get("group")); {
	case r.PostForm.Get("group_clear") == "1":
		edit.Clear = []string{"group"}
	case g != "":
		edit.Group = &g
	}
	var err error
	if edit.Ignored, err = triState(r.PostForm.Get("ignored"), "ignored"); err != nil {
		return err
	}
	watch, err := triState(r.PostForm.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if edit.Group == nil && edit.Clear == nil && edit.Ignored == nil && watch == nil {
		return errBadRequest("Nothing to change: choose a group, ignored or watch setting.")
	}
	if errs := edit.Validate(); len(errs) > 0 {
		return &command.Invalid{Fields: errs}
	}
	touched := edit.Group != nil || edit.Clear != nil || edit.Ignored != nil
	for _, id := range ids {
		if touched {
			if _, err := s.cmd.EditDevice(r.Context(), rs.sess.User, id, edit); err != nil {
				return err
			}
		}
		if watch != nil {
			if _, err := s.cmd.SetWatch(r.Context(), rs.sess.User, id, *watch); err != nil {
				return err
			}
		}
	}
	back := safeNext(r.PostForm.Get("return"))
	if back == "" || !strings.HasPrefix(back, "/devices") && back != "/" {
		back = "/devices"
	}
	u, err := url.Parse(back)
	if err != nil {
		u = &url.URL{Path: "/devices"}
	}
	qv := u.Query()
	qv.Set("updated", strconv.Itoa(len(ids)))
	u.RawQuery = qv.Encode()
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return nil
}

// triState reads an "unchanged / yes / no" choice.
func triState(v, field string) (*bool, error) {
	switch v {
	case "", "keep":
		return nil, nil
	case "yes":
		t := true
		return &t, nil
	case "no":
		f := false
		return &f, nil
	}
	return nil, errBadRequest("The " + field + " choice must be keep, yes or no.")
}

// deviceView is the Device page.
type deviceView struct {
	D         projections.Device
	Names     []nameRow
	Evidence  []evidenceRow
	Addresses []projections.Address
	Strip     strip
	Changes   []projections.ChangeEntry
	MoreURL   string
	Attached  string // the name of the device it is attached to
	Saved     bool
	Problem   string
	Form      editForm
	// Peers are the device's top peers of the last day, nil when no
	// traffic is recorded.
	Peers *peersView
	// Domains are the device's top DNS lookups of the last day, nil when
	// no lookups are recorded.
	Domains *dns.Top
	// Members are the devices merged into this one; Merge the merge
	// form.
	Members []memberRow
	Merge   mergeForm
	// Timeline is a page of the device's timeline.
	Timeline timelineView
}

// PageTitle is the device's label, as the list shows it, with its name;
// its name alone without a label.
func (v deviceView) PageTitle() string {
	if v.D.Label != nil && *v.D.Label != "" && *v.D.Label != v.D.Name {
		return *v.D.Label + " (" + v.D.Name + ")"
	}
	return v.D.Name
}

type nameRow struct {
	Source, Name string
	Confirmed    time.Time
}

type evidenceRow struct {
	Field, Source, Actor string
	Time                 time.Time
}

// editForm is the device edit form's values.
type editForm struct {
	Label, Group, Type, Notes string
	Ignored                   bool
}

func (s *Server) devicePage(w http.ResponseWriter, r *http.Request) error {
	q, err := newQuery(r, append([]string{"saved", "merged", "separated"}, timelineParams...)...)
	if err != nil {
		return err
	}
	tq, err := s.timelineQueryOf(q)
	if err != nil {
		return err
	}
	v, err := s.deviceView(r, r.PathValue("id"), tq)
	if into := mergedInto(err); into != "" {
		s.render(w, r, http.StatusOK, "merged", mergedView{ID: r.PathValue("id"), Into: into})
		return nil
	}
	if err != nil {
		return err
	}
	v.Saved = q.str("saved") == "1"
	if o := q.str("merged"); o != "" {
		v.Merge.Done = "Device " + o + " is merged into this one."
	} else if o := q.str("separated"); o != "" {
		v.Merge.Done = "Device " + o + " is separated: it is shown on its own again."
	}
	s.render(w, r, http.StatusOK, "device", v)
	return nil
}

// timelineSpan is how far back the presence strip reaches.
const timelineSpan = 7 * 24 * time.Hour

// deviceView reads the device page; tq selects its Timeline's page (the
// zero value: the newest of the last 7 days).
func (s *Server) deviceView(r *http.Request, id string, tq timelineQuery) (deviceView, error) {
	ctx := r.Context()
	d, err := s.inv.Device(ctx, id)
	if err != nil {
		return deviceView{}, err
	}
	v := deviceView{D: d, Addresses: slices.Clone(d.Addresses)}
	v.Form = editForm{Label: deref(d.Label), Group: deref(d.Group), Type: deref(d.Type), Notes: deref(d.Notes), Ignored: d.Ignored}
	for src, n := range d.Names {
		v.Names = append(v.Names, nameRow{Source: src, Name: n.Name, Confirmed: n.LastConfirmed})
	}
	slices.SortFunc(v.Names, func(a, b nameRow) int { return cmp.Compare(a.Source, b.Source) })
	for field, e := range d.Evidence {
		v.Evidence = append(v.Evidence, evidenceRow{Field: field, Source: e.Source, Actor: e.Actor, Time: e.Time})
	}
	slices.SortFunc(v.Evidence, func(a, b evidenceRow) int { return cmp.Compare(a.Field, b.Field) })
	slices.SortFunc(v.Addresses, func(a, b projections.Address) int {
		if (a.RetiredAt == nil) != (b.RetiredAt == nil) {
			if a.RetiredAt == nil {
				return -1
			}
			return 1
		}
		return b.LastSeen.Compare(a.LastSeen)
	})
	if at := d.AttachedTo; at != nil {
		// attached_to.device_id is null until the switch or AP is in the
		// inventory; its own name (peer) stands in for it then.
		v.Attached = at.Peer
		if at.DeviceID != nil {
			if sw, err := s.inv.Device(ctx, *at.DeviceID); err == nil {
				v.Attached = sw.Name
			}
		}
		if v.Attached == "" {
			v.Attached = at.Source
		}
	}
	now := tq.now // one now for the strip and the Timeline
	since := now.Add(-timelineSpan)
	pres, err := s.inv.ListEvents(ctx, projections.EventFilter{Device: id, Since: &since, Limit: 1000,
		Kinds: []string{projections.ChangeOnline, projections.ChangeOffline, projections.ChangeQuiet, projections.ChangeDiscovered}})
	if err != nil {
		return deviceView{}, err
	}
	v.Strip = buildStrip(pres.Items, d, since, now, s.cfg.Location)
	changes, err := s.inv.ListEvents(ctx, projections.EventFilter{Device: id, Limit: 50})
	if err != nil {
		return deviceView{}, err
	}
	v.Changes = changes.Items
	if v.Peers, err = s.devicePeers(ctx, id); err != nil {
		return deviceView{}, err
	}
	if v.Domains, err = s.deviceDNS(ctx, id); err != nil {
		return deviceView{}, err
	}
	if s.merge != nil {
		v.Merge.On = true
		if v.Members, err = s.members(ctx, id); err != nil {
			return deviceView{}, err
		}
	}
	if changes.NextCursor != nil {
		v.MoreURL = "/changes?device=" + url.QueryEscape(id)
	}
	if v.Timeline, err = s.deviceTimeline(ctx, id, tq); err != nil {
		return deviceView{}, err
	}
	return v, nil
}

// deviceEdit saves the edit form: an empty text field clears it.
func (s *Server) deviceEdit(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	id := r.PathValue("id")
	var edit command.DeviceEdit
	for _, f := range []struct {
		name string
		dst  **string
	}{{"label", &edit.Label}, {"group", &edit.Group}, {"type", &edit.Type}, {"notes", &edit.Notes}} {
		val := r.PostForm.Get(f.name)
		if f.name != "notes" {
			val = strings.TrimSpace(val)
		} else {
			val = strings.ReplaceAll(val, "\r\n", "\n")
			if strings.TrimSpace(val) == "" {
				val = ""
			}
		}
		if val == "" {
			edit.Clear = append(edit.Clear, f.name)
		} else {
			*f.dst = &val
		}
	}
	ignored := r.PostForm.Get("ignored") == "1"
	edit.Ignored = &ignored
	if _, err := s.cmd.EditDevice(r.Context(), rs.sess.User, id, edit); err != nil {
		if !isUserError(err) {
			return err
		}
		v, verr := s.deviceView(r, id, timelineQuery{})
		if verr != nil {
			return verr
		}
		v.Problem = userMessage(err)
		v.Form = editForm{Label: r.PostForm.Get("label"), Group: r.PostForm.Get("group"), Type: r.PostForm.Get("type"), Notes: r.PostForm.Get("notes"), Ignored: ignored}
		s.render(w, r, http.StatusBadRequest, "device", v)
		return nil
	}
	http.Redirect(w, r, "/devices/"+url.PathEscape(id)+"?saved=1", http.StatusSeeOther)
	return nil
}

func (s *Server) deviceWatch(w http.ResponseWriter, r *http.Request) error {
	rs := sessionFrom(r.Context())
	id := r.PathValue("id")
	watch, err := triState(r.PostForm.Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch == nil {
		return errBadRequest("The watch choice must be yes or no.")
	}
	if _, err := s.cmd.SetWatch(r.Context(), rs.sess.User, id, *watch); err != nil {
		return err
	}
	http.Redirect(w, r, "/devices/"+url.PathEscape(id), http.StatusSeeOther)
	return nil
}
