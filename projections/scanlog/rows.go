package scanlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
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

// encodeRow is the key and row of s, the entry of the event at seq.
func encodeRow(seq uint64, s *projections.Scan) (key, row []byte, err error) {
	js, err := json.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	src := s.Source
	if len(src) > 255 {
		src = src[:255]
	}
	key = make([]byte, keyLen)
	putTime(key, s.Finished)
	binary.BigEndian.PutUint64(key[timeLen:], seq)
	row = make([]byte, timeLen+1, timeLen+1+len(src)+len(js))
	putTime(row, s.Started)
	row[timeLen] = byte(len(src))
	row = append(row, src...)
	return key, append(row, js...), nil
}

// splitRow parses a row: the start time, the source and the JSON.
func splitRow(v []byte) (started time.Time, source []byte, js []byte, ok bool) {
	if len(v) < timeLen+1 {
		return time.Time{}, nil, nil, false
	}
	n := int(v[timeLen])
	if len(v) < timeLen+1+n {
		return time.Time{}, nil, nil, false
	}
	return getTime(v), v[timeLen+1 : timeLen+1+n], v[timeLen+1+n:], true
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
			var s projections.Scan
			if err := json.Unmarshal(js, &s); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
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
