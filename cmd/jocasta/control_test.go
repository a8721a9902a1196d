package main

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStreamingEndsAtShutdown checks that a stream on the control socket
// ends when serve stops: a tail ends cleanly, an export that was cut says
// so in its last line.
func TestStreamingEndsAtShutdown(t *testing.T) {
	tests := []struct {
		name string
		f    func(ctx context.Context, _ struct{}, w io.Writer) error
		want string
	}{
		{"tail ends cleanly", func(ctx context.Context, _ struct{}, w io.Writer) error {
			io.WriteString(w, "{\"seq\":1}\n")
			<-ctx.Done()
			return nil
		}, "{\"seq\":1}\n"},
		{"export cut", func(ctx context.Context, _ struct{}, w io.Writer) error {
			io.WriteString(w, "{\"seq\":1}\n")
			<-ctx.Done()
			return ctx.Err()
		}, "{\"seq\":1}\n{\"error\":\"serve stopped during the command; run it again\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, end := context.WithCancel(context.Background())
			h := streaming(streams, tt.f)
			rec := httptest.NewRecorder()
			done := make(chan error, 1)
			go func() { done <- h(context.Background(), []byte("{}"), rec) }()
			end()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != tt.want {
				t.Errorf("body %q, want %q", got, tt.want)
			}
			if strings.Contains(rec.Body.String(), "context canceled") {
				t.Error("internal error text leaked")
			}
		})
	}
}
