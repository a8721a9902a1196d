package inventory

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// Row layout of the change log.
//
//	inventory.changes            key = seq (8) + index (4)        value = entry row
//	inventory.changes_by_device  key = device id + 0x00 + change key, no value
//	inventory.changes_by_time    key = time (12) + change key     value = device id
//	inventory.changes_group_steady key = change key, no value (GroupSteady entries)
//
// An entry row is time (12) + len(kind) (1) + kind + the entry's JSON, so
// queries filter on time and kind without decoding JSON. Times are 8
// bytes of Unix seconds with the sign bit flipped and 4 bytes of
// nanoseconds, so they sort in time order.
const (
	changeKeyLen = 12
	timeKeyLen   = 12
)

// changeKey is the key of the n-th entry derived from the event at seq.
func changeKey(seq uint64, n uint32) []byte {
	k := make([]byte, changeKeyLen)
	binary.BigEndian.PutUint64(k, seq)
	binary.BigEndian.PutUint32(k[8:], n)
	return k
}

// timeKey encodes t so that keys sort in time order.
func timeKey(t time.Time) []byte {
	k := make([]byte, timeKeyLen)
	putTime(k, t)
	return k
}

func putTime(k []byte, t time.Time) {
	binary.BigEndian.PutUint64(k, uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(k[8:], uint32(t.Nanosecond()))
}

// keyTime decodes a timeKey prefix.
func keyTime(k []byte) time.Time {
	if len(k) < timeKeyLen {
		return time.Time{}
	}
	sec := int64(binary.BigEndian.Uint64(k) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(k[8:]))).UTC()
}

// deviceIndexKey is the key of a change in the per-device index.
func deviceIndexKey(id string, ck []byte) []byte {
	k := make([]byte, 0, len(id)+1+len(ck))
	k = append(k, id...)
	k = append(k, 0)
	return append(k, ck...)
}

// rowWithHeader prefixes js with time and a short tag (kind or source).
func rowWithHeader(t time.Time, tag string, js []byte) []byte {
	return append(appendRowHeader(make([]byte, 0, rowHeaderLen(tag)+len(js)), t, tag), js...)
}

// rowHeaderLen is the length of the header appendRowHeader writes.
func rowHeaderLen(tag string) int { return timeKeyLen + 1 + min(len(tag), 255) }

// appendRowHeader appends the header rowWithHeader puts before the JSON:
// the time, then the tag (cut to 255 bytes) and its length.
func appendRowHeader(b []byte, t time.Time, tag string) []byte {
	if len(tag) > 255 {
		tag = tag[:255]
	}
	n := len(b)
	b = append(b, make([]byte, timeKeyLen)...)
	putTime(b[n:], t)
	b = append(b, byte(len(tag)))
	return append(b, tag...)
}

// splitRow parses a row written by rowWithHeader.
func splitRow(v []byte) (t time.Time, tag string, js []byte, ok bool) {
	if len(v) < timeKeyLen+1 {
		return time.Time{}, "", nil, false
	}
	n := int(v[timeKeyLen])
	if len(v) < timeKeyLen+1+n {
		return time.Time{}, "", nil, false
	}
	return keyTime(v), string(v[timeKeyLen+1 : timeKeyLen+1+n]), v[timeKeyLen+1+n:], true
}

// emitter writes the change-log entries derived from one event, numbering
// them so that ids and keys are the same on every replay.
type emitter struct {
	tx *bolt.Tx
	ev events.Envelope
	n  uint32
}

// actor is who caused the event: its actor, else its source.
func (em *emitter) actor() string {
	if em.ev.Actor != "" {
		return em.ev.Actor
	}
	return em.ev.Source
}

// emit writes one entry about device id.
func (em *emitter) emit(kind, id, summary string, data *projections.OldNew) error {
	ck := changeKey(em.ev.Seq, em.n)
	e := projections.ChangeEntry{
		ID:       em.ev.ID + "-" + strconv.FormatUint(uint64(em.n), 10),
		Seq:      em.ev.Seq,
		Time:     em.ev.Time.UTC(),
		Kind:     kind,
		DeviceID: id,
		Source:   em.ev.Source,
		Actor:    em.actor(),
		Summary:  summary,
		Data:     data,
	}
	em.n++
	js, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode change entry: %w", err)
	}
	if err := em.put(bucketChanges, ck, rowWithHeader(e.Time, kind, js)); err != nil {
		return err
	}
	if err := em.put(bucketChangesByDevice, deviceIndexKey(id, ck), nil); err != nil {
		return err
	}
	tk := append(timeKey(e.Time), ck...)
	return em.put(bucketChangesByTime, tk, []byte(id))
}

// emitPresence is emit for a presence entry (online, offline, quiet),
// marked GroupSteady when steady: the device is merged with others and
// the entry does not change the presence their group shows.
func (em *emitter) emitPresence(steady bool, kind, id, summary string, data *projections.OldNew) error {
	ck := changeKey(em.ev.Seq, em.n)
	if err := em.emit(kind, id, summary, data); err != nil {
		return err
	}
	if !steady {
		return nil
	}
	return em.put(bucketChangesGroupSteady, ck, nil)
}

// put writes one key in one of the projection's buckets.
func (em *emitter) put(bucket string, k, v []byte) error {
	b := em.tx.Bucket([]byte(bucket))
	if b == nil {
		return fmt.Errorf("bucket %q missing", bucket)
	}
	if v == nil {
		v = []byte{}
	}
	if err := b.Put(k, v); err != nil {
		return fmt.Errorf("put in %s: %w", bucket, err)
	}
	return nil
}

// deleteChange removes one entry and its index keys. The entry row gives
// the time and device needed to find the index keys.
func deleteChange(tx *bolt.Tx, ck []byte, id string) error {
	cb := tx.Bucket([]byte(bucketChanges))
	v := cb.Get(ck)
	if v == nil {
		return nil
	}
	t, _, _, ok := splitRow(v)
	if !ok {
		return fmt.Errorf("change %x: malformed row", ck)
	}
	if err := cb.Delete(ck); err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketChangesByDevice)).Delete(deviceIndexKey(id, ck)); err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketChangesGroupSteady)).Delete(ck); err != nil {
		return err
	}
	return tx.Bucket([]byte(bucketChangesByTime)).Delete(append(timeKey(t), ck...))
}

// summaryTime formats a time for summaries: "2026-11-22 10:00 UTC".
func summaryTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// strAny turns an optional string into a JSON value (nil → null).
func strAny(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
