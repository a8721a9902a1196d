package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify/webhook"
)

// KindDigest is the kind a digest message carries (.Kind of an http
// body, the title of a push).
const KindDigest = "notify.digest"

// maxBody bounds an http body a template writes.
const maxBody = 64 << 10

// message is what one request says: one change, or a digest of several.
type message struct {
	entry   projections.ChangeEntry   // the change, or the digest's own entry
	device  *projections.Device       // nil for a digest or a device gone
	changes []projections.ChangeEntry // a digest's changes
}

// TemplateData is what an http body template sees (DECISIONS.md): .Kind,
// .Summary, .Time, .Event (the change-log entry) and .Device (the device
// as the API shows it; empty when gone). A digest has .Kind
// notify.digest, its .Changes and their .Count.
type TemplateData struct {
	Kind    string
	Summary string
	Time    time.Time
	Event   projections.ChangeEntry
	Device  projections.Device
	Changes []projections.ChangeEntry
	Count   int
}

// result is the outcome of one request.
type result struct {
	status     int
	latency    time.Duration
	err        string
	retryable  bool
	retryAfter time.Duration
}

func (r result) ok() bool { return r.err == "" && r.status >= 200 && r.status < 300 }

// send delivers m to d. It never returns an error that shows a URL's
// path, query, or (for an http destination) the URL at all.
func (d *Destination) send(ctx context.Context, client *http.Client, m message, linkBase string, now time.Time) result {
	req, err := d.request(ctx, m, linkBase, now)
	if err != nil {
		return result{err: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	req = req.WithContext(ctx)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return result{latency: time.Since(start), err: d.redact(err), retryable: true}
	}
	_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	res := result{status: resp.StatusCode, latency: time.Since(start)}
	switch s := resp.StatusCode; {
	case rerr != nil && s >= 200 && s < 300:
		// A 2xx whose body did not arrive in time still counts as an
		// answer the receiver gave: it has the message.
	case s >= 200 && s < 300:
	case s == http.StatusRequestTimeout, s == http.StatusTooManyRequests, s >= 500:
		res.err = fmt.Sprintf("answered %d %s", s, http.StatusText(s))
		res.retryable = true
		res.retryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	default:
		res.err = fmt.Sprintf("answered %d %s: not retried (only timeouts, 408, 429 and 5xx are)", s, http.StatusText(s))
	}
	return res
}

// maxRetryAfter bounds a receiver's Retry-After: a day, the retry
// window, so that a hostile or mistaken value cannot park a change.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads a Retry-After header (RFC 9110: delay-seconds or an
// HTTP-date) as a wait from now; 0 when absent, malformed or past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// redact describes a transport error without the URL: the operation
// and the cause, with the destination's URL (and, for http, its host)
// replaced.
func (d *Destination) redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var msg string
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		msg = fmt.Sprintf("no answer within %s (notify.%s.timeout)", d.Timeout, d.Name)
	default:
		var ne *net.OpError
		if errors.As(err, &ne) && ne.Err != nil {
			msg = ne.Op + ": " + ne.Err.Error()
		} else {
			msg = err.Error()
		}
	}
	u, perr := url.Parse(d.url())
	if perr == nil {
		for _, s := range []string{d.url(), u.RawQuery, u.Path, u.User.String()} {
			if len(s) > 1 {
				msg = strings.ReplaceAll(msg, s, "…")
			}
		}
		if d.HTTP != nil && u.Host != "" {
			msg = strings.ReplaceAll(msg, u.Host, "…")
			msg = strings.ReplaceAll(msg, u.Hostname(), "…")
		}
	}
	return msg
}

// request builds the request of m for d.
func (d *Destination) request(ctx context.Context, m message, linkBase string, now time.Time) (*http.Request, error) {
	switch {
	case d.Webhook != nil:
		return d.webhookRequest(ctx, m, now)
	case d.Push != nil:
		return d.pushRequest(ctx, m, linkBase)
	default:
		return d.httpRequest(ctx, m)
	}
}

// webhookBody is the JSON of a webhook (DECISIONS.md).
type webhookBody struct {
	Type      string      `json:"type"`
	Timestamp time.Time   `json:"timestamp"`
	Data      webhookData `json:"data"`
}

type webhookData struct {
	Event  projections.ChangeEntry `json:"event"`
	Device *projections.Device     `json:"device"`
}

func (d *Destination) webhookRequest(ctx context.Context, m message, now time.Time) (*http.Request, error) {
	body, err := json.Marshal(webhookBody{Type: m.entry.Kind, Timestamp: m.entry.Time.UTC(),
		Data: webhookData{Event: m.entry, Device: m.device}})
	if err != nil {
		return nil, fmt.Errorf("encode the webhook body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return nil, errors.New("the webhook URL does not make a request")
	}
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", m.entry.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", webhook.Sign(d.key, m.entry.ID, ts, body))
	return req, nil
}

// pushTitles and pushTags are the push title and tags of each kind.
var pushTitles = map[string][2]string{
	projections.ChangeDiscovered:      {"New device", "new"},
	projections.ChangeOnline:          {"Device online", "green_circle"},
	projections.ChangeOffline:         {"Device offline", "red_circle"},
	projections.ChangeQuiet:           {"Watched device quiet", "warning"},
	projections.ChangeAddressAdded:    {"New address", "link"},
	projections.ChangeAddressRetired:  {"Address retired", "link"},
	projections.ChangeMACChanged:      {"MAC changed", "warning"},
	projections.ChangeNameChanged:     {"Name changed", "label"},
	projections.ChangePortOpened:      {"Port opened", "unlock"},
	projections.ChangePortClosed:      {"Port closed", "lock"},
	projections.ChangeAttached:        {"Device moved", "electric_plug"},
	projections.ChangeEdited:          {"Device edited", "pencil2"},
	projections.ChangeWatchStarted:    {"Watch started", "eyes"},
	projections.ChangeWatchStopped:    {"Watch stopped", "eyes"},
	projections.ChangeDeleted:         {"Device removed", "wastebasket"},
	projections.ChangeSourceFailing:   {"Source failing", "rotating_light"},
	projections.ChangeSourceRecovered: {"Source works again", "white_check_mark"},
	projections.ChangeMerged:          {"Devices merged", "link"},
	projections.ChangeUnmerged:        {"Devices separated", "scissors"},
	KindDigest:                        {"Changes", "bell"},
}

func (d *Destination) pushRequest(ctx context.Context, m message, linkBase string) (*http.Request, error) {
	body := m.entry.Summary
	if len(m.changes) > 0 {
		body = digestText(m.changes)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Push.URL, strings.NewReader(body))
	if err != nil {
		return nil, errors.New("the push URL does not make a request")
	}
	tt, ok := pushTitles[m.entry.Kind]
	if !ok {
		tt = [2]string{m.entry.Kind, "bell"}
	}
	title := "jocasta: " + tt[0]
	if len(m.changes) > 0 {
		title = fmt.Sprintf("jocasta: %d changes", len(m.changes))
	} else if m.device != nil && m.device.Name != "" {
		title += ": " + m.device.Name
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("Title", title)
	req.Header.Set("Tags", tt[1])
	if d.Push.Priority > 0 {
		req.Header.Set("Priority", strconv.Itoa(d.Push.Priority))
	}
	if linkBase != "" && m.entry.DeviceID != "" && len(m.changes) == 0 {
		req.Header.Set("Click", strings.TrimRight(linkBase, "/")+"/devices/"+url.PathEscape(m.entry.DeviceID))
	}
	if d.Push.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Push.Token)
	}
	return req, nil
}

func (d *Destination) httpRequest(ctx context.Context, m message) (*http.Request, error) {
	data := TemplateData{Kind: m.entry.Kind, Summary: m.entry.Summary, Time: m.entry.Time.UTC(), Event: m.entry,
		Changes: m.changes, Count: max(1, len(m.changes))}
	if m.device != nil {
		data.Device = *m.device
	}
	if len(m.changes) > 0 {
		data.Summary = digestText(m.changes)
	}
	var buf bytes.Buffer
	if err := d.body.Execute(&limitWriter{w: &buf, n: maxBody}, data); err != nil {
		return nil, fmt.Errorf("notify.%s.http.body: the template failed: %s", d.Name, templateErr(err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.HTTP.URL, &buf)
	if err != nil {
		return nil, errors.New("the http URL does not make a request")
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range d.HTTP.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// templateErr is the template's error without values: text/template
// errors name the template, position and field, not data.
func templateErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// limitWriter fails a write past n bytes, so a looping template cannot
// grow a body without bound.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		return 0, fmt.Errorf("the body is over %d bytes", maxBody)
	}
	l.n -= len(p)
	return l.w.Write(p)
}

// digestText is a digest's body: counts by kind, then the first
// summaries.
func digestText(changes []projections.ChangeEntry) string {
	counts := map[string]int{}
	var order []string
	for _, c := range changes {
		if counts[c.Kind] == 0 {
			order = append(order, c.Kind)
		}
		counts[c.Kind]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d changes:", len(changes))
	for i, k := range order {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %d %s", counts[k], k)
	}
	b.WriteString("\n")
	const shown = 10
	for i, c := range changes {
		if i == shown {
			fmt.Fprintf(&b, "… and %d more\n", len(changes)-shown)
			break
		}
		b.WriteString(c.Summary)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
