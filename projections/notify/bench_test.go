package notify_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/notify"
	"github.com/jocasta/jocasta/projections/notify/httpnotify"
	"github.com/jocasta/jocasta/projections/notify/push"
)

// BenchmarkDispatch measures dispatch throughput: b.N changes, each
// selected by three destinations (a webhook, a push topic, an http
// endpoint, all httptest servers on loopback), from the feed to the last
// 2xx. It reports changes/s and the p99 of commit-to-delivery latency of
// the webhook (time the change was added to the feed → its request).
func BenchmarkDispatch(b *testing.B) { benchDispatch(b, false) }

// BenchmarkDispatchNoSync is BenchmarkDispatch without fsync: what the
// disk's sync latency costs.
func BenchmarkDispatchNoSync(b *testing.B) { benchDispatch(b, true) }

func benchDispatch(b *testing.B, noSync bool) {
	var got atomic.Int64
	lat := make(chan time.Duration, 1<<20)
	added := map[string]time.Time{}
	addedMu := make(chan struct{}, 1)
	addedMu <- struct{}{}
	srv := func(webhook bool) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if webhook {
				<-addedMu
				t, ok := added[r.Header.Get("webhook-id")]
				addedMu <- struct{}{}
				if ok {
					select {
					case lat <- time.Since(t):
					default:
					}
				}
			}
			got.Add(1)
		}))
		b.Cleanup(s.Close)
		return s
	}
	wh, ps, hs := srv(true), srv(false), srv(false)
	db, f := openDB(b), newFeed()
	db.NoSync = noSync
	dests := []notify.Destination{
		hook("hook", wh.URL, secret),
		{Name: "phone", Enabled: true, Timeout: time.Second, Push: &push.Config{URL: ps.URL + "/t"}},
		{Name: "chat", Enabled: true, Timeout: time.Second, HTTP: &httpnotify.Config{URL: hs.URL, Body: `{"t": {{json .Summary}}}`}},
	}
	d, err := notify.New(notify.Options{DB: db, Head: f.Head, WaitFor: func(context.Context, uint64) error { return nil },
		Feed: f, Rules: rules{"hook": allKinds, "phone": allKinds, "chat": allKinds}, Destinations: dests,
		Poll: 5 * time.Millisecond, DigestOver: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	time.Sleep(20 * time.Millisecond)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		<-addedMu
		seq := f.add(projections.ChangeDiscovered, fmt.Sprint("d", i))
		added[fmt.Sprintf("ev%d-0", seq)] = time.Now()
		addedMu <- struct{}{}
		d.Notify()
	}
	for got.Load() < int64(3*b.N) {
		time.Sleep(time.Millisecond)
	}
	el := time.Since(start)
	b.StopTimer()
	cancel()
	<-done
	close(lat)
	var ls []time.Duration
	for l := range lat {
		ls = append(ls, l)
	}
	if len(ls) > 0 {
		slicesSort(ls)
		b.ReportMetric(float64(ls[len(ls)*99/100].Microseconds())/1000, "p99_ms")
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "changes/s")
}

func slicesSort(s []time.Duration) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
