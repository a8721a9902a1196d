package inventory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// applyPurge folds a retention.purged: change-log entries older than
// history_before go (the scan log purges its own entries); each device named in deleted_devices goes with
// its own change-log entries, leaving one device.deleted entry, provided
// it is still unprotected and last seen before devices_before when the
// event is applied (a device seen or edited after the purge was decided
// stays). Traffic and DNS cutoffs concern other projections.
func (i *Inventory) applyPurge(em *emitter, p *events.RetentionPurged) error {
	tx := em.tx
	if p.HistoryBefore != nil {
		cut := p.HistoryBefore.UTC()
		old, err := keysBefore(tx, bucketChangesByTime, cut)
		if err != nil {
			return err
		}
		tb := tx.Bucket([]byte(bucketChangesByTime))
		for _, kv := range old {
			if err := deleteChange(tx, kv.k[timeKeyLen:], string(kv.v)); err != nil {
				return fmt.Errorf("purge change: %w", err)
			}
			if err := tb.Delete(kv.k); err != nil { // in case the row was already gone
				return fmt.Errorf("purge change: %w", err)
			}
		}
	}
	if p.DevicesBefore == nil {
		return nil
	}
	cut := p.DevicesBefore.UTC()
	ids := slices.Clone(p.DeletedDevices)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, id := range ids {
		d := i.devs[id]
		if d == nil || !d.LastSeen.Before(cut) || d.protected() || i.keptByMerge(d, cut) {
			continue
		}
		own, err := deviceChanges(tx, id)
		if err != nil {
			return err
		}
		for _, ck := range own {
			if err := deleteChange(tx, ck, id); err != nil {
				return fmt.Errorf("purge changes of %s: %w", id, err)
			}
		}
		i.removeDevice(d)
		if err := em.emit(projections.ChangeDeleted, id,
			fmt.Sprintf("%s was deleted by retention (last seen %s)", d.display(), summaryTime(d.LastSeen)), nil); err != nil {
			return err
		}
	}
	return nil
}

// removeDevice drops d from memory and queues the row's deletion.
func (i *Inventory) removeDevice(d *device) {
	i.heapRemove(d)
	delete(i.overdue, d.ID)
	for _, a := range d.Addrs {
		i.releaseIP(a.IP, d)
	}
	if i.byKey[d.Key] == d {
		delete(i.byKey, d.Key)
	}
	delete(i.devs, d.ID)
	i.docs.free(d)
	delete(i.dirty, d.ID)
	i.deleted[d.ID] = true
}

type kv struct{ k, v []byte }

// keysBefore returns the keys (and values) of a time-keyed bucket before
// cut, copied. Values are copied too; callers that only delete use the
// keys.
func keysBefore(tx *bolt.Tx, bucket string, cut time.Time) ([]kv, error) {
	b := tx.Bucket([]byte(bucket))
	if b == nil {
		return nil, fmt.Errorf("bucket %q missing", bucket)
	}
	limit := timeKey(cut)
	var out []kv
	c := b.Cursor()
	for k, v := c.First(); k != nil && bytes.Compare(k[:min(len(k), timeKeyLen)], limit) < 0; k, v = c.Next() {
		out = append(out, kv{bytes.Clone(k), bytes.Clone(v)})
	}
	return out, nil
}

// deviceChanges returns the change keys of one device, copied.
func deviceChanges(tx *bolt.Tx, id string) ([][]byte, error) {
	b := tx.Bucket([]byte(bucketChangesByDevice))
	if b == nil {
		return nil, fmt.Errorf("bucket %q missing", bucketChangesByDevice)
	}
	prefix := append([]byte(id), 0)
	var out [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		out = append(out, bytes.Clone(k[len(prefix):]))
	}
	return out, nil
}

// Cutoffs are the times before which records are purged; nil keeps a
// kind of record forever.
type Cutoffs struct {
	History *time.Time
	Devices *time.Time
}

// PurgePlan works out what a purge with these cutoffs would remove now:
// counts by record type ("changes", "devices") and the ids of the
// devices to delete (last seen before the devices cutoff and not
// protected), sorted. It reads the committed change log.
func (i *Inventory) PurgePlan(ctx context.Context, c Cutoffs) (map[string]int, []string, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	if i.db == nil {
		return nil, nil, fmt.Errorf("inventory: purge plan: %w", ErrNotLoaded)
	}
	counts := map[string]int{"changes": 0, "devices": 0}
	var deleted []string
	if c.Devices != nil {
		for _, id := range i.sortedIDs() {
			d := i.devs[id]
			if d.LastSeen.Before(*c.Devices) && !d.protected() && !i.keptByMerge(d, *c.Devices) {
				deleted = append(deleted, id)
			}
		}
	}
	counts["devices"] = len(deleted)
	err := i.db.View(func(tx *bolt.Tx) error {
		if c.History != nil {
			if b := tx.Bucket([]byte(bucketChangesByTime)); b != nil {
				limit := timeKey(*c.History)
				cur := b.Cursor()
				for k, _ := cur.First(); k != nil && bytes.Compare(k[:min(len(k), timeKeyLen)], limit) < 0; k, _ = cur.Next() {
					counts["changes"]++
				}
			}
		}
		cb := tx.Bucket([]byte(bucketChanges))
		for _, id := range deleted {
			if err := ctx.Err(); err != nil {
				return err
			}
			own, err := deviceChanges(tx, id)
			if err != nil {
				return err
			}
			for _, ck := range own {
				t, _, _, ok := splitRow(cb.Get(ck))
				if ok && (c.History == nil || !t.Before(*c.History)) {
					counts["changes"]++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("inventory: purge plan: %w", err)
	}
	return counts, deleted, nil
}
