package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections"
)

// logCursor is the decoded form of a change-log cursor: the
// key of the last entry returned.
type logCursor struct {
	K []byte `json:"k"`
}

// inWindow reports whether t is within the optional since/until bounds
// (both inclusive).
func inWindow(t time.Time, since, until *time.Time) bool {
	if since != nil && t.Before(*since) {
		return false
	}
	if until != nil && t.After(*until) {
		return false
	}
	return true
}

// ListEvents returns one page of the change log, newest first (by seq):
// all devices or one (f.Device; an unknown device gives an empty page),
// any of f.Kinds, with time within since/until.
func (i *Inventory) ListEvents(ctx context.Context, f projections.EventFilter) (projections.Page[projections.ChangeEntry], error) {
	page := projections.Page[projections.ChangeEntry]{Items: []projections.ChangeEntry{}}
	limit := clampLimit(f.Limit)
	var after []byte
	if f.Cursor != "" {
		var c logCursor
		if err := decodeCursor(f.Cursor, &c); err != nil || len(c.K) != changeKeyLen {
			return page, fmt.Errorf("inventory: list events: %w", projections.ErrBadCursor)
		}
		after = c.K
	}
	db, err := i.loadedDB()
	if err != nil {
		return page, fmt.Errorf("inventory: list events: %w", err)
	}
	if strings.ContainsAny(f.Device, "\x00\x01") {
		return page, nil // not an id: the index separator would misread it
	}
	// A device with others merged into it lists theirs too, and every
	// entry of a merged device shows the device it is merged into
	// (merge.go).
	group, roots := i.groupIDs(f.Device), i.aliasRoots()
	var lastKey []byte
	more := false
	err = db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket([]byte(bucketChanges))
		if cb == nil {
			return nil
		}
		// prev walks change keys backwards from just before after.
		var next func() []byte
		if f.Device != "" {
			ib := tx.Bucket([]byte(bucketChangesByDevice))
			if ib == nil {
				return nil
			}
			prefix := append([]byte(f.Device), 0)
			start := append([]byte(f.Device), 1) // just past the device's keys
			if after != nil {
				start = deviceIndexKey(f.Device, after)
			}
			c := ib.Cursor()
			k, _ := c.Seek(start)
			first := true
			next = func() []byte {
				if first {
					first = false
					if k == nil {
						k, _ = c.Last()
					} else {
						k, _ = c.Prev()
					}
				} else {
					k, _ = c.Prev()
				}
				if k == nil || !bytes.HasPrefix(k, prefix) {
					return nil
				}
				return k[len(prefix):]
			}
		} else {
			c := cb.Cursor()
			first := true
			next = func() []byte {
				var k []byte
				switch {
				case !first:
					k, _ = c.Prev()
				case after == nil:
					k, _ = c.Last()
				default:
					if k, _ = c.Seek(after); k == nil {
						k, _ = c.Last()
					} else {
						k, _ = c.Prev()
					}
				}
				first = false
				return k
			}
		}
		if ib := tx.Bucket([]byte(bucketChangesByDevice)); group != nil && ib != nil {
			next = mergedIndexWalk(ib, group, after)
		}
		for n := 0; ; n++ {
			if n%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			ck := next()
			if ck == nil {
				return nil
			}
			t, kind, js, ok := splitRow(cb.Get(ck))
			if !ok {
				continue
			}
			if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, kind) {
				continue
			}
			if !inWindow(t, f.Since, f.Until) {
				continue
			}
			if len(page.Items) == limit {
				more = true
				return nil
			}
			var e projections.ChangeEntry
			if err := json.Unmarshal(js, &e); err != nil {
				return fmt.Errorf("change %x: %w", ck, err)
			}
			if r, ok := roots[e.DeviceID]; ok {
				e.DeviceID = r
			}
			page.Items = append(page.Items, e)
			lastKey = bytes.Clone(ck)
		}
	})
	if err != nil {
		return projections.Page[projections.ChangeEntry]{Items: []projections.ChangeEntry{}}, fmt.Errorf("inventory: list events: %w", err)
	}
	if more {
		c := encodeCursor(logCursor{K: lastKey})
		page.NextCursor = &c
	}
	return page, nil
}

// loadedDB returns the database Load saw.
func (i *Inventory) loadedDB() (*bolt.DB, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.db == nil {
		return nil, ErrNotLoaded
	}
	return i.db, nil
}
