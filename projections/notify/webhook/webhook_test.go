package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"
)

func TestSigningKey(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	for secret, want := range map[string][]byte{
		"whsec_" + base64.StdEncoding.EncodeToString(key): key,
		"plain text secret": []byte("plain text secret"),
	} {
		got, err := SigningKey(secret)
		if err != nil || string(got) != string(want) {
			t.Errorf("SigningKey(%q) = %q, %v", secret, got, err)
		}
	}
	for _, bad := range []string{"whsec_", "whsec_!!!", "whsec_abc"} {
		if _, err := SigningKey(bad); !errors.Is(err, ErrBadSecret) {
			t.Errorf("SigningKey(%q): %v, want ErrBadSecret", bad, err)
		}
	}
}

// TestSign checks the signature against an HMAC computed independently,
// over the exact string the Standard Webhooks scheme signs.
func TestSign(t *testing.T) {
	key := []byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	body := []byte(`{"type":"device.discovered"}`)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("msg_2b9XkQ.1714557712." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := Sign(key, "msg_2b9XkQ", 1714557712, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if Sign(key, "msg_2b9XkQ", 1714557713, body) == want {
		t.Fatal("the timestamp is not signed")
	}
}
