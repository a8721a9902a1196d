package notify

import (
	"errors"
	"fmt"
	"net/url"
	"text/template"
	"time"

	"github.com/jocasta/jocasta/projections/notify/httpnotify"
	"github.com/jocasta/jocasta/projections/notify/push"
	"github.com/jocasta/jocasta/projections/notify/webhook"
)

// Channels of a destination (Destination.Channel).
const (
	ChannelPush    = "push"
	ChannelWebhook = "webhook"
	ChannelHTTP    = "http"
)

// Destination is one configured destination (notify.<name>): exactly
// one of Push, Webhook and HTTP is set.
type Destination struct {
	Name    string
	Enabled bool
	// Timeout bounds one send, response included. Default 10s.
	Timeout time.Duration
	Push    *push.Config
	Webhook *webhook.Config
	HTTP    *httpnotify.Config

	key  []byte             // webhook signing key
	body *template.Template // http body
}

// Channel is push, webhook or http.
func (d *Destination) Channel() string {
	switch {
	case d.Push != nil:
		return ChannelPush
	case d.Webhook != nil:
		return ChannelWebhook
	default:
		return ChannelHTTP
	}
}

// Target is what may be shown of where the destination sends: scheme
// and host of a push or webhook URL (a path or query may hold a token),
// nothing of an http URL (secret as a whole).
func (d *Destination) Target() string {
	var raw string
	switch {
	case d.Push != nil:
		raw = d.Push.URL
	case d.Webhook != nil:
		raw = d.Webhook.URL
	default:
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// url is the URL requests go to.
func (d *Destination) url() string {
	switch {
	case d.Push != nil:
		return d.Push.URL
	case d.Webhook != nil:
		return d.Webhook.URL
	case d.HTTP != nil:
		return d.HTTP.URL
	}
	return ""
}

// prepare checks the destination and derives its signing key or body
// template. Errors name the key, never a value.
func (d *Destination) prepare() error {
	n := 0
	for _, set := range []bool{d.Push != nil, d.Webhook != nil, d.HTTP != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("notify.%s: want exactly one of push, webhook and http", d.Name)
	}
	if d.Timeout <= 0 {
		d.Timeout = 10 * time.Second
	}
	u, err := url.Parse(d.url())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("notify.%s.%s.url: not an http(s) URL (the value is not shown)", d.Name, d.Channel())
	}
	switch {
	case d.Webhook != nil:
		d.key, err = webhook.SigningKey(d.Webhook.Secret)
		if err != nil {
			return fmt.Errorf("notify.%s.webhook.secret: %w", d.Name, err)
		}
		if len(d.key) == 0 {
			return fmt.Errorf("notify.%s.webhook.secret: required", d.Name)
		}
	case d.HTTP != nil:
		d.body, err = httpnotify.ParseBody(d.HTTP.Body)
		if err != nil {
			return fmt.Errorf("notify.%s.http.body: %w", d.Name, err)
		}
	}
	return nil
}

// errNoDestination is returned for a name no enabled destination has.
var errNoDestination = errors.New("no such destination")

// ErrDisabled refuses a test or a re-delivery to a destination whose
// enabled is false: nothing is sent to it.
var ErrDisabled = errors.New("destination is disabled")
