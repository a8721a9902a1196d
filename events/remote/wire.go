package remote

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/jocasta/jocasta/events"
)

// Topic is the name of the JetStream stream the sensors publish to.
// Each sensor publishes on its own subject in it, SubjectFor(name), so
// that a NATS server's permissions can bind a sensor's credentials to its
// name; the central refuses a message whose subject is not its sensor's.
const Topic = "jocasta-sensors"

// SubjectFor is the subject sensor publishes on: "jocasta-sensors.<name>".
func SubjectFor(sensor string) string { return Topic + "." + sensor }

// Message headers (watermill metadata, sent as NATS headers).
const (
	// HeaderMsgID is JetStream's de-duplication header: the observation id.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderSensor is the sending sensor's name.
	HeaderSensor = "Jocasta-Sensor"
	// HeaderKind is the kind of the source instance ("sweep", "routerapi").
	HeaderKind = "Jocasta-Kind"
	// HeaderInterval is the sensor's shortest source interval in seconds.
	HeaderInterval = "Jocasta-Interval"
	// HeaderSent is when the sensor published, in Unix nanoseconds.
	HeaderSent = "Jocasta-Sent"
	// HeaderEncoding is "gzip" for a compressed body.
	HeaderEncoding = "Jocasta-Encoding"
	// HeaderSubject is the subject the message arrived on: set by the
	// central's unmarshaler from the message itself (a header of that
	// name a sender sets is replaced), never sent.
	HeaderSubject = "Jocasta-Subject"
)

// gzipAbove is the body size above which a message is compressed: a
// whole sweep of a thousand hosts is about 150 KB of JSON and a tenth of
// that compressed, and NATS refuses payloads above 1 MB by default.
const gzipAbove = 16 << 10

// maxBody bounds what the central inflates (a sensor's bug or malice must
// not exhaust its memory).
const maxBody = 64 << 20

// Observation is one event a sensor sends: the envelope ingest would
// append (whole, never a difference), and about whom.
type Observation struct {
	Sensor string
	// Kind is the source instance's kind ("sweep", "portscan", "routerapi").
	Kind string
	// Interval is the sensor's shortest source interval: the central
	// calls it silent after three of them without a message.
	Interval time.Duration
	// Sent is when it was published.
	Sent time.Time
	// Event is the observation; its ID is the observation id.
	Event events.Envelope
}

var sensorName = regexp.MustCompile(`^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$`)

// ValidSensorName reports whether name can name a sensor: lower-case
// letters, digits, '-' and '_', at most 63, starting and ending with a
// letter or digit.
func ValidSensorName(name string) bool { return sensorName.MatchString(name) }

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// wireEvent is what travels: the envelope's fields a sensor sets.
type wireEvent struct {
	ID      string          `json:"id"`
	Time    time.Time       `json:"time"`
	Kind    string          `json:"kind"`
	V       int             `json:"v"`
	Source  string          `json:"source"`
	Stream  string          `json:"stream,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// Encode turns o into a watermill message whose UUID and Nats-Msg-Id are
// the observation id.
func Encode(o Observation) (*message.Message, error) {
	e := o.Event
	if !hexID.MatchString(e.ID) {
		return nil, fmt.Errorf("remote: encode: observation id %q: want 32 hex digits", e.ID)
	}
	body, err := json.Marshal(wireEvent{ID: e.ID, Time: e.Time.UTC(), Kind: e.Kind, V: e.V, Source: e.Source, Stream: e.Stream, Payload: e.Payload})
	if err != nil {
		return nil, fmt.Errorf("remote: encode %s: %w", e.ID, err)
	}
	gz := false
	if len(body) > gzipAbove {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		if _, err := w.Write(body); err != nil {
			return nil, fmt.Errorf("remote: compress %s: %w", e.ID, err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("remote: compress %s: %w", e.ID, err)
		}
		body, gz = b.Bytes(), true
	}
	m := message.NewMessage(e.ID, body)
	m.Metadata.Set(HeaderMsgID, e.ID)
	m.Metadata.Set(HeaderSensor, o.Sensor)
	m.Metadata.Set(HeaderKind, o.Kind)
	m.Metadata.Set(HeaderInterval, strconv.FormatInt(int64(o.Interval/time.Second), 10))
	sent := o.Sent
	if sent.IsZero() {
		sent = time.Now()
	}
	m.Metadata.Set(HeaderSent, strconv.FormatInt(sent.UnixNano(), 10))
	if gz {
		m.Metadata.Set(HeaderEncoding, "gzip")
	}
	return m, nil
}

// Decode reads a message Encode wrote. Every error wraps ErrRefused: a
// message that does not decode never will.
func Decode(m *message.Message) (Observation, error) {
	o := Observation{Sensor: m.Metadata.Get(HeaderSensor), Kind: m.Metadata.Get(HeaderKind)}
	if !ValidSensorName(o.Sensor) {
		return o, fmt.Errorf("remote: %w: sensor name %q is not a sensor name", ErrRefused, o.Sensor)
	}
	if subj, ok := m.Metadata[HeaderSubject]; ok && subj != SubjectFor(o.Sensor) {
		return o, fmt.Errorf("remote: %w: a message of sensor %q on subject %q, not %s", ErrRefused, o.Sensor, subj, SubjectFor(o.Sensor))
	}
	if secs, err := strconv.ParseInt(m.Metadata.Get(HeaderInterval), 10, 64); err == nil && secs > 0 && secs < 1<<31 {
		o.Interval = time.Duration(secs) * time.Second
	}
	if ns, err := strconv.ParseInt(m.Metadata.Get(HeaderSent), 10, 64); err == nil && ns > 0 {
		o.Sent = time.Unix(0, ns)
	}
	body := []byte(m.Payload)
	switch enc := m.Metadata.Get(HeaderEncoding); enc {
	case "":
	case "gzip":
		r, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return o, fmt.Errorf("remote: %w: from %s: body: %w", ErrRefused, o.Sensor, err)
		}
		body, err = io.ReadAll(io.LimitReader(r, maxBody+1))
		if err != nil || len(body) > maxBody {
			return o, fmt.Errorf("remote: %w: from %s: body too large or corrupt", ErrRefused, o.Sensor)
		}
	default:
		return o, fmt.Errorf("remote: %w: from %s: encoding %q", ErrRefused, o.Sensor, enc)
	}
	var w wireEvent
	if err := json.Unmarshal(body, &w); err != nil {
		return o, fmt.Errorf("remote: %w: from %s: event: %w", ErrRefused, o.Sensor, err)
	}
	// The transport keeps Nats-Msg-Id for itself; the message's UUID is
	// the same id.
	if !hexID.MatchString(w.ID) || m.UUID != w.ID {
		return o, fmt.Errorf("remote: %w: from %s: observation id %q does not match its message id", ErrRefused, o.Sensor, w.ID)
	}
	if w.Time.IsZero() {
		return o, fmt.Errorf("remote: %w: from %s: observation %s has no time", ErrRefused, o.Sensor, w.ID)
	}
	o.Event = events.Envelope{ID: w.ID, Time: w.Time.UTC(), Kind: w.Kind, V: w.V, Source: w.Source, Stream: w.Stream, Payload: w.Payload}
	return o, nil
}
