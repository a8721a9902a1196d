package inventory

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections"
)

// ChangesAfter is the change feed the notification dispatcher follows:
// about limit change-log entries (the entries of the last event are
// never split, so a few more may come) derived from events after the
// event at seq after, in log order (by seq, then in the order one event made
// them), and the seq to pass next time: that of the last entry returned,
// or after itself when there is none. The change log holds what the
// projection has applied, so a caller that must not miss a change waits
// for the projection to reach a seq first. Entries retention already
// removed are not returned; ids are stable across a rebuild, so a
// re-delivered entry has the id it had.
func (i *Inventory) ChangesAfter(ctx context.Context, after uint64, limit int) ([]projections.ChangeEntry, uint64, error) {
	if limit <= 0 {
		limit = 100
	}
	db, err := i.loadedDB()
	if err != nil {
		return nil, after, fmt.Errorf("inventory: changes after %d: %w", after, err)
	}
	out := []projections.ChangeEntry{}
	next := after
	roots := i.aliasRoots() // a merged device's entries show its group (merge.go)
	err = db.View(func(tx *bolt.Tx) error {
		cb := tx.Bucket([]byte(bucketChanges))
		if cb == nil {
			return nil
		}
		steady := tx.Bucket([]byte(bucketChangesGroupSteady))
		c := cb.Cursor()
		for k, v := c.Seek(changeKey(after+1, 0)); k != nil; k, v = c.Next() {
			if len(k) != changeKeyLen {
				continue
			}
			seq := binary.BigEndian.Uint64(k)
			// The entries of one event are never split across calls: the
			// next call starts after the last seq returned.
			if len(out) >= limit && seq != next {
				break
			}
			if len(out)%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			_, _, js, ok := splitRow(v)
			if !ok {
				continue
			}
			var e projections.ChangeEntry
			if err := json.Unmarshal(js, &e); err != nil {
				return fmt.Errorf("change %x: %w", k, err)
			}
			if r, ok := roots[e.DeviceID]; ok {
				e.DeviceID = r
			}
			e.GroupSteady = steady != nil && steady.Get(k) != nil
			out = append(out, e)
			next = seq
		}
		return nil
	})
	if err != nil {
		return nil, after, fmt.Errorf("inventory: changes after %d: %w", after, err)
	}
	return out, next, nil
}
