package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/notify/httpnotify"
	"github.com/jocasta/jocasta/projections/notify/push"
	"github.com/jocasta/jocasta/projections/notify/webhook"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// feed is an in-memory change feed with the inventory's contract:
// entries in seq order, the entries of one seq never split.
type feed struct {
	mu      sync.Mutex
	entries []projections.ChangeEntry
	devices map[string]projections.Device
	head    uint64
}

func newFeed() *feed { return &feed{devices: map[string]projections.Device{}} }

// add appends one event's changes (one per device id) at the next seq.
func (f *feed) add(kind string, ids ...string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.head++
	for i, id := range ids {
		if _, ok := f.devices[id]; !ok {
			f.devices[id] = projections.Device{ID: id, Name: "host-" + id}
		}
		f.entries = append(f.entries, projections.ChangeEntry{
			ID: fmt.Sprintf("ev%d-%d", f.head, i), Seq: f.head, Time: time.Unix(1700000000+int64(f.head), 0).UTC(),
			Kind: kind, DeviceID: id, Source: "sweep:lan", Summary: fmt.Sprintf("%s %s", kind, id),
		})
	}
	return f.head
}

// steady marks the last entry GroupSteady (a merged member's presence
// change that did not change its group's).
func (f *feed) steady() {
	f.mu.Lock()
	f.entries[len(f.entries)-1].GroupSteady = true
	f.mu.Unlock()
}

func (f *feed) setDevice(d projections.Device) {
	f.mu.Lock()
	f.devices[d.ID] = d
	f.mu.Unlock()
}

func (f *feed) Head() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}

func (f *feed) ChangesAfter(_ context.Context, after uint64, limit int) ([]projections.ChangeEntry, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []projections.ChangeEntry{}
	next := after
	from := sort.Search(len(f.entries), func(i int) bool { return f.entries[i].Seq > after })
	for _, e := range f.entries[from:] {
		if len(out) >= limit && e.Seq != next {
			break
		}
		out = append(out, e)
		next = e.Seq
	}
	return out, next, nil
}

func (f *feed) Device(_ context.Context, id string) (projections.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.devices[id]
	if !ok {
		return projections.Device{}, projections.ErrNotFound
	}
	return d, nil
}

// rules is a fixed rule source.
type rules map[string][]notify.Rule

func (r rules) RuleSet(dest string) (notify.RuleSet, bool) {
	if x, ok := r[dest]; ok {
		return notify.RuleSet{Rules: x}, true
	}
	return notify.RuleSet{Rules: notify.DefaultRules()}, false
}

var allKinds = []notify.Rule{{Kinds: notify.SelectableKinds(), Scope: events.ScopeAll}}

// receiver is a webhook/push/http receiver that records what it got and
// answers with the statuses queued in fail (then 200).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	body [][]byte
	fail []int
	hold time.Duration // answer this late (a timeout)
	// holdOnce holds only the next request.
	holdOnce bool
	// slowBody answers 200 at once, then holds the body back for hold.
	slowBody bool
	rcvd     chan struct{}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{rcvd: make(chan struct{}, 10000)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.fail) > 0 {
			status, r.fail = r.fail[0], r.fail[1:]
		}
		hold, slow := r.hold, r.slowBody
		if r.holdOnce {
			r.hold = 0
		}
		if status == http.StatusOK {
			r.got = append(r.got, req)
			r.body = append(r.body, b)
		}
		r.mu.Unlock()
		if slow && hold > 0 {
			w.WriteHeader(status)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(hold):
			case <-req.Context().Done():
			}
			w.Write([]byte("late"))
			r.rcvd <- struct{}{}
			return
		}
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-req.Context().Done():
				return
			}
		}
		w.WriteHeader(status)
		if status == http.StatusOK {
			r.rcvd <- struct{}{}
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *receiver) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for r.count() < n {
		select {
		case <-r.rcvd:
		case <-deadline:
			t.Fatalf("receiver got %d requests, want %d", r.count(), n)
		}
	}
}

func openDB(t testing.TB) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "n.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// start runs a dispatcher until the test ends (or stop is called).
func start(t *testing.T, db *bolt.DB, f *feed, r notify.RuleSource, dests ...notify.Destination) (*notify.Dispatcher, func()) {
	t.Helper()
	d, err := notify.New(notify.Options{
		DB: db, Head: f.Head, WaitFor: func(context.Context, uint64) error { return nil },
		Feed: f, Rules: r, Destinations: dests, Poll: 10 * time.Millisecond,
		BackoffMin: 20 * time.Millisecond, BackoffMax: 50 * time.Millisecond, DigestWait: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return d, stop
}

func hook(name, url, secret string) notify.Destination {
	return notify.Destination{Name: name, Enabled: true, Timeout: time.Second, Webhook: &webhook.Config{URL: url, Secret: secret}}
}

// verify checks a Standard Webhooks signature the way the spec says,
// independently of package webhook.
func verify(t *testing.T, secret string, req *http.Request, body []byte) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		t.Errorf("webhook-timestamp %q is not a current Unix time", ts)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := req.Header.Get("webhook-signature"); !hmac.Equal([]byte(got), []byte(want)) {
		t.Errorf("webhook-signature %q, want %q", got, want)
	}
	// And as a receiver using the reference library verifies it.
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, req.Header); err != nil {
		t.Errorf("the reference standardwebhooks library refuses the delivery: %v", err)
	}
}

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestWebhookSignedFromHead(t *testing.T) {
	db, f := openDB(t), newFeed()
	f.add(projections.ChangeDiscovered, "old") // before the first start: never sent
	rcv := newReceiver(t)
	start(t, db, f, rules{"hook": allKinds}, hook("hook", rcv.URL+"/in", secret))
	time.Sleep(50 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "a", "b")
	rcv.wait(t, 2)
	time.Sleep(50 * time.Millisecond)
	if n := rcv.count(); n != 2 {
		t.Fatalf("got %d requests, want 2 (the change from before the start must not be sent)", n)
	}
	for i, req := range rcv.got {
		verify(t, secret, req, rcv.body[i])
		var b struct {
			Type      string `json:"type"`
			Timestamp string `json:"timestamp"`
			Data      struct {
				Event  projections.ChangeEntry `json:"event"`
				Device *projections.Device     `json:"device"`
			} `json:"data"`
		}
		if err := json.Unmarshal(rcv.body[i], &b); err != nil {
			t.Fatal(err)
		}
		if b.Type != projections.ChangeDiscovered || b.Data.Event.ID != req.Header.Get("webhook-id") || b.Data.Device == nil || b.Data.Device.ID != b.Data.Event.DeviceID {
			t.Errorf("body %s does not match its headers", rcv.body[i])
		}
		if _, err := time.Parse(time.RFC3339, b.Timestamp); err != nil {
			t.Errorf("timestamp %q: %v", b.Timestamp, err)
		}
	}
}

// ledgerState waits until the record of id at dest has state.
func ledgerState(t *testing.T, db *bolt.DB, dest, id, state string) notify.Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		page, err := notify.ReadLedger(db, dest, notify.LedgerFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			if r.ID == id && r.State == state {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("record %s of %s never reached %s: %+v", id, dest, state, page.Items)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFailures(t *testing.T) {
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL
	refused.Close() // nothing listens there now
	tests := []struct {
		name      string
		fail      []int
		hold      time.Duration
		url       string
		wantState string
		wantErr   string
		attempts  int
	}{
		{"503 then delivered", []int{503, 503}, 0, "", notify.StateSent, "503", 3},
		{"429 then delivered", []int{429}, 0, "", notify.StateSent, "429", 2},
		{"408 then delivered", []int{408}, 0, "", notify.StateSent, "408", 2},
		{"timeout then delivered", nil, 1500 * time.Millisecond, "", notify.StateSent, "no answer within", 2},
		{"400 given up at once", []int{400}, 0, "", notify.StateDead, "400", 1},
		{"410 given up at once", []int{410}, 0, "", notify.StateDead, "410", 1},
		{"connection refused retried", nil, 0, refusedURL + "/tok3n-path?auth=S3CR3T", notify.StatePending, "connection refused", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, f := openDB(t), newFeed()
			rcv := newReceiver(t)
			rcv.fail, rcv.hold, rcv.holdOnce = tt.fail, tt.hold, true
			u := tt.url
			if u == "" {
				u = rcv.URL
			}
			d := hook("hook", u, secret)
			start(t, db, f, rules{"hook": allKinds}, d)
			time.Sleep(30 * time.Millisecond)
			f.add(projections.ChangeDiscovered, "a")
			var r notify.Record
			if tt.wantState == notify.StatePending {
				deadline := time.Now().Add(5 * time.Second)
				for len(r.Attempts) < tt.attempts && time.Now().Before(deadline) {
					r = ledgerState(t, db, "hook", "ev1-0", notify.StatePending)
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				r = ledgerState(t, db, "hook", "ev1-0", tt.wantState)
			}
			if len(r.Attempts) < tt.attempts || (tt.wantState != notify.StatePending && len(r.Attempts) != tt.attempts) {
				t.Errorf("%d attempts, want %d: %+v", len(r.Attempts), tt.attempts, r.Attempts)
			}
			if !strings.Contains(r.Attempts[0].Error, tt.wantErr) {
				t.Errorf("first attempt's error %q does not say %q", r.Attempts[0].Error, tt.wantErr)
			}
			js, _ := json.Marshal(r)
			for _, s := range []string{"S3CR3T", "tok3n", secret} {
				if strings.Contains(string(js), s) {
					t.Errorf("the ledger shows %q: %s", s, js)
				}
			}
		})
	}
}

// A receiver that answers 200 and then holds its body back neither
// hangs the dispatcher past its timeout nor turns the delivery into a
// failure: the status decided it.
func TestSlowBody(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	rcv.slowBody, rcv.hold = true, 5*time.Second
	start(t, db, f, rules{"hook": allKinds}, hook("hook", rcv.URL, secret))
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "a")
	began := time.Now()
	r := ledgerState(t, db, "hook", "ev1-0", notify.StateSent)
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("the delivery took %v behind a slow body (timeout 1s)", took)
	}
	if len(r.Attempts) != 1 || r.Attempts[0].Status != 200 {
		t.Errorf("attempts %+v", r.Attempts)
	}
}

func TestDeadRedelivered(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	rcv.fail = []int{404}
	d, _ := start(t, db, f, rules{"hook": allKinds}, hook("hook", rcv.URL, secret))
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "a")
	ledgerState(t, db, "hook", "ev1-0", notify.StateDead)
	if n, err := d.Redeliver("hook", "ev1-0"); err != nil || n != 1 {
		t.Fatalf("Redeliver = %d, %v", n, err)
	}
	r := ledgerState(t, db, "hook", "ev1-0", notify.StateSent)
	if len(r.Attempts) != 2 {
		t.Errorf("attempts %+v, want the 404 and the 200", r.Attempts)
	}
	if _, err := d.Redeliver("hook", "ev1-0"); err == nil {
		t.Error("re-delivering a sent record: want an error")
	}
	if _, err := d.Redeliver("hook", "nope"); err == nil {
		t.Error("re-delivering an unknown id: want an error")
	}
}

// TestRestartMidDelivery stops the dispatcher while the receiver holds a
// request, then starts another on the same file: every change arrives,
// each id at least once, none decided twice.
func TestRestartMidDelivery(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	rcv.hold = 2 * time.Second
	_, stop := start(t, db, f, rules{"hook": allKinds}, hook("hook", rcv.URL, secret))
	time.Sleep(30 * time.Millisecond)
	for i := range 5 {
		f.add(projections.ChangeDiscovered, fmt.Sprint("d", i))
	}
	time.Sleep(200 * time.Millisecond) // the first request is being held
	stop()
	rcv.mu.Lock()
	rcv.hold = 0
	rcv.mu.Unlock()
	f.add(projections.ChangeDiscovered, "late")
	start(t, db, f, rules{"hook": allKinds}, hook("hook", rcv.URL, secret))
	rcv.wait(t, 6)
	time.Sleep(100 * time.Millisecond)
	ids := map[string]int{}
	rcv.mu.Lock()
	for _, r := range rcv.got {
		ids[r.Header.Get("webhook-id")]++
	}
	rcv.mu.Unlock()
	for i := 1; i <= 6; i++ {
		if ids[fmt.Sprintf("ev%d-0", i)] == 0 {
			t.Errorf("change ev%d-0 never arrived: %v", i, ids)
		}
	}
	page, err := notify.ReadLedger(db, "hook", notify.LedgerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 6 {
		t.Errorf("ledger has %d records, want 6 (each change decided once)", len(page.Items))
	}
}

func TestDigestForPushBurst(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	dest := notify.Destination{Name: "phone", Enabled: true, Timeout: time.Second,
		Push: &push.Config{URL: rcv.URL + "/alerts", Token: "tk_secret", Priority: 4}}
	start(t, db, f, rules{"phone": allKinds}, dest)
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "single")
	rcv.wait(t, 1)
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = fmt.Sprint("n", i)
	}
	f.add(projections.ChangeDiscovered, ids...) // a first sweep
	rcv.wait(t, 2)
	time.Sleep(300 * time.Millisecond)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.got) != 2 {
		t.Fatalf("%d messages, want the single one and one digest", len(rcv.got))
	}
	one, dig := rcv.got[0], rcv.got[1]
	if one.Header.Get("Authorization") != "Bearer tk_secret" || one.Header.Get("Priority") != "4" ||
		!strings.HasPrefix(one.Header.Get("Title"), "jocasta: New device") || string(rcv.body[0]) != "device.discovered single" {
		t.Errorf("single push: headers %v body %q", one.Header, rcv.body[0])
	}
	if !strings.HasPrefix(string(rcv.body[1]), "500 changes: 500 device.discovered") || dig.Header.Get("Title") != "jocasta: 500 changes" {
		t.Errorf("digest: title %q body %q", dig.Header.Get("Title"), rcv.body[1])
	}
	// The attempts are written after the request: wait for the commit.
	var sent int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		page, err := notify.ReadLedger(db, "phone", notify.LedgerFilter{State: notify.StateSent, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if sent = len(page.Items); sent >= 501 || time.Now().After(deadline) {
			break
		}
	}
	if sent != 501 {
		t.Errorf("%d sent records, want 501", sent)
	}
}

// A digest that fails is retried as one digest: its changes came due at
// times jittered one by one and went out as single messages (a burst of
// 62 to a receiver that was down arrived as 62 messages once it was up).
func TestDigestRetriedAsOne(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	rcv.fail = []int{503, 503, 503}
	dest := notify.Destination{Name: "phone", Enabled: true, Timeout: time.Second, Push: &push.Config{URL: rcv.URL + "/alerts"}}
	start(t, db, f, rules{"phone": allKinds}, dest)
	time.Sleep(30 * time.Millisecond)
	ids := make([]string, 62)
	for i := range ids {
		ids[i] = fmt.Sprint("n", i)
	}
	f.add(projections.ChangeDiscovered, ids...)
	rcv.wait(t, 1)
	time.Sleep(300 * time.Millisecond) // room for stray single messages
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.body) != 1 || !strings.HasPrefix(string(rcv.body[0]), "62 changes") {
		var first []string
		for _, b := range rcv.body[:min(3, len(rcv.body))] {
			first = append(first, string(b))
		}
		t.Fatalf("%d messages after three failed attempts, want one digest of 62; first: %q", len(rcv.body), first)
	}
}

// TestDigestGathersWithoutRereading: while a push destination gathers a
// burst into a digest, the changes that keep arriving one by one join it
// when its wait ends, instead of each waking the sender to read and
// decode the whole pending burst again (at 1,000 changes/s that was a
// thousand reads of up to a thousand records a second).
func TestDigestGathersWithoutRereading(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	d := runPush(t, db, f, rcv, 10*time.Millisecond, 2*time.Second)
	const changes = 200
	for i := range changes {
		f.add(projections.ChangeDiscovered, fmt.Sprint("n", i))
		d.Notify()
		time.Sleep(2 * time.Millisecond)
	}
	messages, _ := waitDelivered(t, rcv, changes)
	// The first DigestOver (20) go alone, one round each; then the
	// burst is gathered: a read when it starts and one when it is sent.
	if messages > notify.DefaultDigestOver+3 {
		t.Errorf("%d messages for %d changes: the burst was not gathered into a digest", messages, changes)
	}
	t.Logf("%d messages, %d outbox reads", messages, d.OutboxReads())
	if reads := d.OutboxReads(); reads > 2*notify.DefaultDigestOver {
		t.Errorf("%d outbox reads for %d changes: the sender read the gathering burst again for each change", reads, changes)
	}
}

// runPush runs a dispatcher with one push destination to rcv until the
// test ends, every change selected, with the given poll and digest wait.
func runPush(t *testing.T, db *bolt.DB, f *feed, rcv *receiver, poll, digestWait time.Duration) *notify.Dispatcher {
	t.Helper()
	dest := notify.Destination{Name: "phone", Enabled: true, Timeout: time.Second, Push: &push.Config{URL: rcv.URL + "/alerts"}}
	d, err := notify.New(notify.Options{
		DB: db, Head: f.Head, WaitFor: func(context.Context, uint64) error { return nil },
		Feed: f, Rules: rules{"phone": allKinds}, Destinations: []notify.Destination{dest},
		Poll: poll, DigestWait: digestWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	time.Sleep(30 * time.Millisecond) // it starts at the head
	return d
}

// waitDelivered waits until rcv has every one of n changes, counting a
// digest's changes, and returns the messages and the digests among them.
func waitDelivered(t *testing.T, rcv *receiver, n int) (messages, digests int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rcv.mu.Lock()
		delivered := 0
		messages, digests = len(rcv.body), 0
		for _, b := range rcv.body {
			if k, ok := digestCount(b); ok {
				delivered += int(k)
				digests++
			} else {
				delivered++
			}
		}
		rcv.mu.Unlock()
		if delivered >= n {
			return messages, digests
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d changes delivered", delivered, n)
		}
	}
}

func TestHTTPTemplate(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	dest := notify.Destination{Name: "chat", Enabled: true, Timeout: time.Second, HTTP: &httpnotify.Config{
		URL:     rcv.URL + "/hooks/T0K3N",
		Headers: map[string]string{"X-Api-Key": "k3y", "Content-Type": "application/vnd.chat+json"},
		Body:    `{"text": {{json .Summary}}, "kind": {{json (upper .Kind)}}, "label": {{json (.Device.Label | default "unnamed")}}, "id": {{json .Event.ID}}}`,
	}}
	start(t, db, f, rules{"chat": allKinds}, dest)
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "a")
	rcv.wait(t, 1)
	want := `{"text": "device.discovered a", "kind": "DEVICE.DISCOVERED", "label": "unnamed", "id": "ev1-0"}`
	if got := string(rcv.body[0]); got != want {
		t.Errorf("body\n%s\nwant\n%s", got, want)
	}
	if h := rcv.got[0].Header; h.Get("X-Api-Key") != "k3y" || h.Get("Content-Type") != "application/vnd.chat+json" {
		t.Errorf("headers %v", h)
	}
}

func TestRulesDecide(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	start(t, db, f, rules{}, hook("hook", rcv.URL, secret)) // default rules
	time.Sleep(30 * time.Millisecond)
	group := "cams"
	f.add(projections.ChangeDiscovered, "w")
	f.setDevice(projections.Device{ID: "w", Watched: true, Group: &group})
	f.add(projections.ChangeOnline, "w")     // watched: sent
	f.add(projections.ChangeOnline, "u")     // not watched: filtered
	f.add(projections.ChangePortOpened, "w") // kind not selected
	rcv.wait(t, 2)
	ledgerState(t, db, "hook", "ev2-0", notify.StateSent)
	r := ledgerState(t, db, "hook", "ev3-0", notify.StateFiltered)
	if r.Reason != "device not watched" {
		t.Errorf("reason %q", r.Reason)
	}
	r = ledgerState(t, db, "hook", "ev4-0", notify.StateFiltered)
	if r.Reason != "kind not selected" {
		t.Errorf("reason %q", r.Reason)
	}
	st, err := notify.LedgerStats(db, "hook")
	if err != nil || st != (notify.Stats{Sent: 2, Filtered: 2}) {
		t.Errorf("stats %+v, %v", st, err)
	}
}

// A presence change of a merged device that did not change its group's
// (GroupSteady) is never sent, whatever the rules; the group's own
// changes are.
func TestGroupSteadyNotSent(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	all := rules{"hook": {{Kinds: []string{projections.ChangeOnline, projections.ChangeOffline}, Scope: events.ScopeAll}}}
	start(t, db, f, all, hook("hook", rcv.URL, secret))
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeOffline, "nas") // a member, the group still online
	f.steady()
	f.add(projections.ChangeOffline, "nas") // the last member: the group offline
	rcv.wait(t, 1)
	r := ledgerState(t, db, "hook", "ev1-0", notify.StateFiltered)
	if !strings.Contains(r.Reason, "merged group") {
		t.Errorf("reason %q", r.Reason)
	}
	ledgerState(t, db, "hook", "ev2-0", notify.StateSent)
}

func TestTestMessage(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	d, _ := start(t, db, f, rules{}, hook("hook", rcv.URL, secret))
	a, err := d.Test(context.Background(), "hook")
	if err != nil || a.Status != 200 || a.Error != "" {
		t.Fatalf("Test = %+v, %v", a, err)
	}
	verify(t, secret, rcv.got[0], rcv.body[0])
	if _, err := d.Test(context.Background(), "nope"); err == nil {
		t.Error("test of an unknown destination: want an error")
	}
}

var _ = net.Dial

// With the web interface's address set (server.base_url), a push message
// links to the device there; a digest links nowhere.
func TestPushClickLink(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	dest := notify.Destination{Name: "phone", Enabled: true, Timeout: time.Second, Push: &push.Config{URL: rcv.URL + "/alerts"}}
	d, err := notify.New(notify.Options{
		DB: db, Head: f.Head, WaitFor: func(context.Context, uint64) error { return nil },
		Feed: f, Rules: rules{"phone": allKinds}, Destinations: []notify.Destination{dest}, Poll: 10 * time.Millisecond,
		LinkBase: "https://jocasta.lan",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(30 * time.Millisecond)
	f.add(projections.ChangeDiscovered, "dabc")
	rcv.wait(t, 1)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if got := rcv.got[0].Header.Get("Click"); got != "https://jocasta.lan/devices/dabc" {
		t.Errorf("Click %q", got)
	}
}

// TestDigestOfATrickle: changes that arrive one event at a time, each
// sent before the next arrives, still become a digest once more than
// DigestOver come within a minute (before, a digest needed two changes
// due in one read, so a trickle went out one message per change).
func TestDigestOfATrickle(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	d := runPush(t, db, f, rcv, 5*time.Millisecond, 400*time.Millisecond)
	const changes = 100
	for i := range changes {
		f.add(projections.ChangeDiscovered, fmt.Sprint("n", i))
		d.Notify()
		time.Sleep(10 * time.Millisecond)
	}
	messages, digests := waitDelivered(t, rcv, changes)
	t.Logf("%d changes one by one: %d messages, %d of them digests", changes, messages, digests)
	// The first DigestOver alone, then digests of what each wait gathers.
	if digests == 0 || messages > notify.DefaultDigestOver+5 {
		t.Errorf("%d messages (%d digests) for %d changes arriving one by one within a minute: want about %d single messages and a few digests",
			messages, digests, changes, notify.DefaultDigestOver)
	}
}

// TestStopWhileSendingADigest: serve stopping while a push receiver
// holds a digest's request ends Run at once (it looped reading the same
// burst again, never returning, and serve never exited).
func TestStopWhileSendingADigest(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	rcv.hold = 5 * time.Second
	dest := notify.Destination{Name: "phone", Enabled: true, Timeout: 10 * time.Second, Push: &push.Config{URL: rcv.URL + "/alerts"}}
	d, stop := start(t, db, f, rules{"phone": allKinds}, dest)
	time.Sleep(30 * time.Millisecond)
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprint("n", i)
	}
	f.add(projections.ChangeDiscovered, ids...)
	for deadline := time.Now().Add(5 * time.Second); rcv.count() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the digest was never sent")
		}
	}
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		t.Fatalf("Run did not return 3 s after its context ended (%d outbox reads)", d.OutboxReads())
	}
	// Nothing was recorded as an attempt: the burst is pending, sent
	// again (as a digest, same ids) at the next start.
	page, err := notify.ReadLedger(db, "phone", notify.LedgerFilter{State: notify.StatePending, Limit: 100})
	if err != nil || len(page.Items) != len(ids) {
		t.Fatalf("%d pending records after the stop (%v), want %d", len(page.Items), err, len(ids))
	}
	for _, r := range page.Items {
		if len(r.Attempts) != 0 {
			t.Fatalf("record %s has attempts %+v: a stop is not an attempt", r.ID, r.Attempts)
		}
	}
}

// TestDisabledDestination: a destination with enabled: false is sent
// nothing, so a test message or a re-delivery to it is refused rather
// than said to be done.
func TestDisabledDestination(t *testing.T) {
	db, f := openDB(t), newFeed()
	rcv := newReceiver(t)
	off := hook("off", rcv.URL, secret)
	off.Enabled = false
	d, _ := start(t, db, f, rules{}, hook("on", rcv.URL, secret), off)
	if _, err := d.Test(context.Background(), "off"); !errors.Is(err, notify.ErrDisabled) {
		t.Errorf("Test of a disabled destination: %v, want ErrDisabled", err)
	}
	if _, err := d.Redeliver("off", ""); !errors.Is(err, notify.ErrDisabled) {
		t.Errorf("Redeliver to a disabled destination: %v, want ErrDisabled", err)
	}
	if rcv.count() != 0 {
		t.Errorf("a disabled destination got %d requests", rcv.count())
	}
	if _, err := d.Test(context.Background(), "on"); err != nil {
		t.Errorf("Test of an enabled destination: %v", err)
	}
}
