package scanlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections"
)

// timeLen is the length of an encoded time: Unix seconds with the sign
// bit flipped (so that keys sort by time), then nanoseconds.
const timeLen = 12

// keyLen is the length of a key: finish time and seq.
const keyLen = timeLen + 8

func putTime(b []byte, t time.Time) {
	binary.BigEndian.PutUint64(b, uint64(t.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(t.Nanosecond()))
}

func getTime(b []byte) time.Time {
	sec := int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
	return time.Unix(sec, int64(binary.BigEndian.Uint32(b[8:]))).UTC()
}

// rowFormat is the first byte of an entry's body: the binary layout
// below. An entry is written on every run and read only when listed, so
// it is encoded without reflection (encoding/json cost as much as the
// rest of the scan log's replay).
const rowFormat = 1

// encodeRow is the key and row of s, the entry of the event at seq: the
// header (start time, source cut to 255 bytes, for filters), then the
// body: rowFormat, then uvarint-length strings and varints in the order
// id, source, kind, duration_ms, networks (count, each), probes_sent,
// hosts_found, rows, complete (0/1), errors (count, each). The finish
// time is the key's.
func encodeRow(seq uint64, s *projections.Scan) (key, row []byte, err error) {
	src := s.Source
	if len(src) > 255 {
		src = src[:255]
	}
	// The key and the row share one allocation (the row is appended
	// after the key, within its capacity).
	buf := make([]byte, keyLen+timeLen+1, keyLen+timeLen+1+len(src)+64+len(s.ID)+len(s.Source)+len(s.Kind))
	key = buf[:keyLen:keyLen]
	putTime(key, s.Finished)
	binary.BigEndian.PutUint64(key[timeLen:], seq)
	row = buf[keyLen:]
	putTime(row, s.Started)
	row[timeLen] = byte(len(src))
	row = append(row, src...)
	row = append(row, rowFormat)
	row = appendString(row, s.ID)
	row = appendString(row, s.Source)
	row = appendString(row, s.Kind)
	row = binary.AppendVarint(row, s.DurationMS)
	row = appendStrings(row, s.Networks)
	row = binary.AppendVarint(row, int64(s.ProbesSent))
	row = binary.AppendVarint(row, int64(s.HostsFound))
	row = binary.AppendVarint(row, int64(s.Rows))
	complete := byte(0)
	if s.Complete {
		complete = 1
	}
	row = append(row, complete)
	return key, appendStrings(row, s.Errors), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// splitRow parses a row: the start time, the source and the body.
func splitRow(v []byte) (started time.Time, source []byte, body []byte, ok bool) {
	if len(v) < timeLen+1 {
		return time.Time{}, nil, nil, false
	}
	n := int(v[timeLen])
	if len(v) < timeLen+1+n {
		return time.Time{}, nil, nil, false
	}
	return getTime(v), v[timeLen+1 : timeLen+1+n], v[timeLen+1+n:], true
}

// rowReader reads a body; the first error sticks.
type rowReader struct {
	b   []byte
	bad bool
}

func (r *rowReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *rowReader) string() string {
	l, n := binary.Uvarint(r.b)
	if n <= 0 || l > uint64(len(r.b)-n) {
		r.bad = true
		return ""
	}
	s := string(r.b[n : n+int(l)])
	r.b = r.b[n+int(l):]
	return s
}

func (r *rowReader) strings() []string {
	c, n := binary.Uvarint(r.b)
	if n <= 0 || c > uint64(len(r.b)) { // every string takes a byte at least
		r.bad = true
		return nil
	}
	r.b = r.b[n:]
	out := make([]string, 0, c)
	for range c {
		out = append(out, r.string())
	}
	return out
}

// decodeBody reads the entry whose key is k, start time started.
func decodeBody(k []byte, started time.Time, body []byte) (projections.Scan, error) {
	if len(body) == 0 || body[0] != rowFormat {
		return projections.Scan{}, fmt.Errorf("entry %x: unknown row format", k)
	}
	r := rowReader{b: body[1:]}
	s := projections.Scan{Started: started, Finished: getTime(k)}
	s.ID, s.Source, s.Kind = r.string(), r.string(), r.string()
	s.DurationMS = r.varint()
	s.Networks = r.strings()
	s.ProbesSent, s.HostsFound, s.Rows = int(r.varint()), int(r.varint()), int(r.varint())
	if len(r.b) == 0 {
		r.bad = true
	} else {
		s.Complete, r.b = r.b[0] == 1, r.b[1:]
	}
	s.Errors = r.strings()
	if r.bad || len(r.b) != 0 {
		return projections.Scan{}, fmt.Errorf("entry %x: malformed row", k)
	}
	return s, nil
}

// deleteBefore removes the entries that finished before t: a prefix of
// the bucket.
func deleteBefore(b *bolt.Bucket, t time.Time) error {
	limit := make([]byte, timeLen)
	putTime(limit, t)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:min(len(k), timeLen)], limit) < 0; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// RowsBefore counts the entries that finished before t: what a purge
// with that history cutoff removes (the retention job's plan).
func (l *Log) RowsBefore(ctx context.Context, t time.Time) (int, error) {
	db, err := l.loadedDB()
	if err != nil {
		return 0, fmt.Errorf("scanlog: rows before: %w", err)
	}
	limit := make([]byte, timeLen)
	putTime(limit, t)
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bScans)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:min(len(k), timeLen)], limit) < 0; k, _ = c.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("scanlog: rows before: %w", err)
	}
	return n, nil
}

// ListScans returns one page of the scan log, newest first (by finish
// time, then seq), of one source or all, started within since/until
// (both inclusive). Pages hold f.Limit entries (default 100, at most
// 1000); NextCursor continues after the last one.
func (l *Log) ListScans(ctx context.Context, f projections.ScanFilter) (projections.Page[projections.Scan], error) {
	page := projections.Page[projections.Scan]{Items: []projections.Scan{}}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	var after []byte
	if f.Cursor != "" {
		k, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		if err != nil || len(k) != keyLen {
			return page, fmt.Errorf("scanlog: list scans: %w", projections.ErrBadCursor)
		}
		after = k
	}
	db, err := l.loadedDB()
	if err != nil {
		return page, fmt.Errorf("scanlog: list scans: %w", err)
	}
	var lastKey []byte
	more := false
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bScans)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		switch {
		case after == nil:
			k, v = c.Last()
		default:
			if k, _ = c.Seek(after); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for n := 0; k != nil; k, v = c.Prev() {
			if n++; n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			started, src, js, ok := splitRow(v)
			if !ok {
				return fmt.Errorf("entry %x: malformed row", k)
			}
			if f.Source != "" && string(src) != f.Source {
				continue
			}
			if (f.Since != nil && started.Before(*f.Since)) || (f.Until != nil && started.After(*f.Until)) {
				continue
			}
			if len(page.Items) == limit {
				more = true
				return nil
			}
			s, err := decodeBody(k, started, js)
			if err != nil {
				return err
			}
			page.Items = append(page.Items, s)
			lastKey = bytes.Clone(k)
		}
		return nil
	})
	if err != nil {
		return projections.Page[projections.Scan]{Items: []projections.Scan{}}, fmt.Errorf("scanlog: list scans: %w", err)
	}
	if more {
		c := base64.RawURLEncoding.EncodeToString(lastKey)
		page.NextCursor = &c
	}
	return page, nil
}
