package dns

import (
	"context"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxCounted bounds what RowsBefore counts: the purge only needs to know
// there is something, and says how much.
const maxCounted = 1_000_000

// RowsBefore counts the rows of hours that start before t (at most a
// million): what a purge at retention.dns would remove. The purger asks
// it, so that an hour past its retention is removed even when nothing
// else is.
func (p *Projection) RowsBefore(ctx context.Context, t time.Time) (int, error) {
	limit, ok := hourOf(t.Unix())
	if !ok {
		return 0, nil
	}
	n := 0
	err := p.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHours)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && n < maxCounted; k, _ = c.Next() {
			if len(k) < 4 || binary.BigEndian.Uint32(k[:4]) >= limit {
				break
			}
			n++
			if n%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	})
	return n, err
}
