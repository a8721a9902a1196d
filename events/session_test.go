package events

import (
	"encoding/json"
	"testing"
	"time"
)

func TestSessionPayloadsRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		kind    string
		payload any
		into    any
	}{
		{KindSessionStarted, SessionStarted{SessionID: "ses_1", User: "ada", ExpiresAt: at.Add(time.Hour), SecretSHA256: "ab"}, &SessionStarted{}},
		{KindSessionEnded, SessionEnded{SessionID: "ses_1", Reason: SessionEndIdle}, &SessionEnded{}},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			e, err := New(tc.kind, tc.payload, at)
			if err != nil {
				t.Fatal(err)
			}
			if err := DecodeInto(e, tc.into); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(tc.into)
			want, _ := json.Marshal(tc.payload)
			if string(got) != string(want) {
				t.Fatalf("round trip %s, want %s", got, want)
			}
			if len(e.Payload) > 200 {
				t.Errorf("payload %d bytes: sessions must stay compact", len(e.Payload))
			}
		})
	}
}
