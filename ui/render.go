package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html static/*
var files embed.FS

// pages are the page templates; each is parsed with layout.html. A test
// checks that every file in templates/ is listed here or is the layout.
var pages = []string{
	"signin", "setup", "error", "devices", "device", "changes", "scans",
	"groups", "stats", "tokens", "users", "settings", "traffic", "notifications",
	"notification", "dns", "history", "merged",
}

// views holds the parsed templates.
type views struct {
	t map[string]*template.Template
}

// parseViews parses every page once, at start-up.
func parseViews(as *assets, loc *time.Location) (*views, error) {
	funcs := template.FuncMap{
		"when":       func(t time.Time) string { return fmtTime(t, loc) },
		"whenp":      func(t *time.Time) string { return fmtTimePtr(t, loc) },
		"str":        deref,
		"asset":      as.url,
		"join":       strings.Join,
		"dur":        fmtMillis,
		"plural":     plural,
		"presence":   presenceLabel,
		"list":       func(xs ...string) []string { return xs },
		"pair":       func(a string, b any) pairOf { return pairOf{a, b} },
		"bytes":      fmtBytes,
		"country":    countryLabel,
		"ms":         func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) + " ms" },
		"inc":        func(i int) int { return i + 1 },
		"rowsMarker": func() template.HTML { return rowsMarker },
		"add":        func(a, b uint64) uint64 { return a + b },
	}
	vs := &views{t: map[string]*template.Template{}}
	for _, p := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: parse template %s: %w", p, err)
		}
		vs.t[p] = t
	}
	return vs, nil
}

// pairOf passes two values to a sub-template.
type pairOf struct {
	A string
	B any
}

// pageView is what layout.html renders: the frame, and the page's own
// typed view in Data.
type pageView struct {
	Title     string
	Nav       string
	User      string
	FormToken string
	// Traffic, DNS and Notify put the Traffic, DNS and Notifications
	// pages in the menu: only when the service records traffic, records
	// DNS lookups and has notifications.
	Traffic bool
	DNS     bool
	Notify  bool
	History bool
	Data    any
}

// titled is a page view that names its page.
type titled interface{ PageTitle() string }

var titles = map[string]string{
	"signin": "Sign in", "setup": "Set up jocasta", "error": "Error", "devices": "Devices",
	"device": "Device", "changes": "Change log", "scans": "Scans", "groups": "Groups",
	"stats": "Stats", "tokens": "API tokens", "users": "Users", "settings": "Settings",
	"traffic": "Traffic", "notifications": "Notifications", "notification": "Notification destination", "dns": "DNS lookups",
	"history": "History", "merged": "Merged device",
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes the page into a buffer and writes it, so a template
// failure is a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v := pageView{Title: titles[name], Nav: name, Data: data, Traffic: s.flows != nil, DNS: s.dns != nil, Notify: s.notes != nil, History: s.hist != nil}
	if t, ok := data.(titled); ok {
		v.Title = t.PageTitle()
	}
	if rs := sessionFrom(r.Context()); rs != nil {
		v.User, v.FormToken = rs.sess.User, rs.formToken
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	t := s.views.t[name]
	if t == nil {
		s.log.Error().Str("template", name).Msg("ui: no such template")
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(buf, v); err != nil {
		s.log.Error().Err(err).Str("template", name).Msg("ui: render failed")
		http.Error(w, "internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	head, tail := buf.Bytes(), []byte(nil)
	var rows *bytes.Buffer
	if sp, ok := data.(splicer); ok {
		if i := bytes.Index(head, []byte(rowsMarker)); i >= 0 {
			rows = bufPool.Get().(*bytes.Buffer)
			rows.Reset()
			defer bufPool.Put(rows)
			sp.spliceRows(rows, s.cfg.Location)
			head, tail = head[:i], head[i+len(rowsMarker):]
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	n := len(head) + len(tail)
	if rows != nil {
		n += rows.Len()
	}
	h.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(head)
		if rows != nil {
			_, _ = w.Write(rows.Bytes())
			_, _ = w.Write(tail)
		}
	}
}

// rowsMarker is where a splicer's rows go in its page: the template
// writes it (the rowsMarker function), render writes the rows there.
const rowsMarker = "<!--rows-->"

// splicer is a page whose long table is written by Go, not by the
// template (devicesView).
type splicer interface {
	spliceRows(b *bytes.Buffer, loc *time.Location)
}

// timeLayout is how the pages write a time.
const timeLayout = "2006-01-02 15:04:05 MST"

func fmtTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(loc).Format(timeLayout)
}

func fmtTimePtr(t *time.Time, loc *time.Location) string {
	if t == nil {
		return "—"
	}
	return fmtTime(*t, loc)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func fmtMillis(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// fmtBytes writes n bytes with a decimal unit: 950 B, 1.2 kB, 3.4 GB.
func fmtBytes(n uint64) string {
	const units = "kMGTPE"
	if n < 1000 {
		return strconv.FormatUint(n, 10) + " B"
	}
	f, i := float64(n)/1000, 0
	for f >= 999.95 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i:i+1] + "B"
}

// countryLabel is a country code as shown: "—" for none (private or
// unknown addresses).
func countryLabel(c string) string {
	if c == "" {
		return "—"
	}
	return c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func presenceLabel(p string) string {
	switch p {
	case "online":
		return "● online"
	case "offline":
		return "○ offline"
	case "quiet":
		return "◌ quiet"
	}
	return p
}

// assets are the embedded static files, served at URLs that carry their
// content hash and cached for a year.
type assets struct {
	byURL  map[string]asset
	byName map[string]string // file name → URL
}

type asset struct {
	body  []byte
	ctype string
}

// assetTypes are the content types of the embedded assets, by extension:
// a table of ours rather than mime.TypeByExtension, which reads the
// machine's whole MIME database on first use (0.7 MB of heap kept for
// the life of serve) and answers what that database says, which differs
// between machines.
var assetTypes = map[string]string{
	".css":   "text/css; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".json":  "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/vnd.microsoft.icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
}

func loadAssets() (*assets, error) {
	as := &assets{byURL: map[string]asset{}, byName: map[string]string{}}
	entries, err := fs.ReadDir(files, "static")
	if err != nil {
		return nil, fmt.Errorf("ui: read embedded assets: %w", err)
	}
	for _, e := range entries {
		b, err := files.ReadFile("static/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("ui: read asset %s: %w", e.Name(), err)
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(e.Name())
		u := "/static/" + strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:6]) + ext
		ct, ok := assetTypes[ext]
		if !ok {
			return nil, fmt.Errorf("ui: asset %s: no content type for %q (add it to assetTypes)", e.Name(), ext)
		}
		as.byURL[u] = asset{body: b, ctype: ct}
		as.byName[e.Name()] = u
	}
	return as, nil
}

// url is the hashed URL of an embedded file; a template naming a file
// that does not exist fails at render, and a test renders every page.
func (as *assets) url(name string) (string, error) {
	u, ok := as.byName[name]
	if !ok {
		return "", fmt.Errorf("ui: no asset %q", name)
	}
	return u, nil
}

// names lists the embedded files.
func (as *assets) names() []string {
	out := make([]string, 0, len(as.byName))
	for n := range as.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (as *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a, ok := as.byURL[r.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("no such file\n"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.body)
	}
}
