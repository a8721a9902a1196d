// Package webhook is the Standard Webhooks delivery channel of
// notifications: it owns how a destination's secret becomes the signing
// key and how a request is signed, which the configuration loader uses to
// check `notify.<name>.webhook.secret` at start.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// ErrBadSecret is returned for a secret that starts with whsec_ but does
// not continue with standard base64 of at least one byte.
var ErrBadSecret = errors.New("webhook: a secret that starts with whsec_ must continue with standard base64 (the signing key)")

// SigningKey is the HMAC key of a destination's secret: the base64-decoded
// rest of a secret that starts with whsec_, otherwise the secret's bytes
// (DECISIONS.md).
func SigningKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(key) == 0 {
			return nil, ErrBadSecret
		}
		return key, nil
	}
	return []byte(secret), nil
}

// Sign is the webhook-signature header value of one delivery: "v1," and
// the standard base64 of HMAC-SHA256(key, id "." timestamp "." body).
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Config is a destination's webhook block (notify.<name>.webhook).
type Config struct {
	URL    string `yaml:"url" cfg:"url"`       // required; http(s); only scheme and host are ever shown
	Secret string `yaml:"secret" cfg:"secret"` // required; "whsec_" + base64, or any other text (SigningKey)
}
