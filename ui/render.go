package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
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
	"groups", "stats", "tokens", "users", "settings",
}

// views holds the parsed templates.
type views struct {
	t map[string]*template.Template
}

// parseViews parses every page once, at start-up.
func parseViews(as *assets, loc *time.Location) (*views, error) {
	funcs := template.FuncMap{
		"when":     func(t time.Time) string { return fmtTime(t, loc) },
		"whenp":    func(t *time.Time) string { return fmtTimePtr(t, loc) },
		"str":      deref,
		"asset":    as.url,
		"join":     strings.Join,
		"dur":      fmtMillis,
		"plural":   plural,
		"presence": presenceLabel,
		"list":     func(xs ...string) []string { return xs },
		"pair":     func(a string, b any) pairOf { return pairOf{a, b} },
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
	Data      any
}

// titled is a page view that names its page.
type titled interface{ PageTitle() string }

var titles = map[string]string{
	"signin": "Sign in", "setup": "Set up jocasta", "error": "Error", "devices": "Devices",
	"device": "Device", "changes": "Change log", "scans": "Scans", "groups": "Groups",
	"stats": "Stats", "tokens": "API tokens", "users": "Users", "settings": "Settings",
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes the page into a buffer and writes it, so a template
// failure is a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	v := pageView{Title: titles[name], Nav: name, Data: data}
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
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

func fmtTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
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
		ct := mime.TypeByExtension(ext)
		if ct == "" {
			ct = "application/octet-stream"
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
