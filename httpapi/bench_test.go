package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
)

// benchServer is the full middleware chain over the fakes, logging to
// io.Discard (JSON encoding of the access line still happens), with the
// real clock.
func benchServer(b *testing.B) http.Handler {
	b.Helper()
	inv := newFakeInventory()
	// Limits high enough never to trigger, but still checked per request.
	cfg := httpapi.Config{ClientRate: 1e9, ClientBurst: 1 << 30, TokenRate: 1e9, TokenBurst: 1 << 30}
	h, err := httpapi.New(cfg, httpapi.Deps{
		Inventory: inv, Commander: &fakeCommander{inv: inv}, Auth: &fakeAuth{}, Ready: &fakeReady{ready: true},
		Log: zerolog.New(io.Discard),
	})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func benchGet(b *testing.B, target string) {
	h := benchServer(b)
	newReq := func() *http.Request {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer "+tokRead)
		return r
	}
	// The answer is checked once against the OpenAPI document.
	if resp, _ := validator.Do(b, h, newReq()); resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
	req := newReq()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

func BenchmarkGetDevice(b *testing.B) { benchGet(b, "/api/devices/dev-nas") }

func BenchmarkListDevices(b *testing.B) {
	benchGet(b, "/api/devices?q=a&presence=online&sort=-last_seen&limit=50")
}

func BenchmarkLivez(b *testing.B) { benchGet(b, "/api/livez") }
