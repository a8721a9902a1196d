package traffic

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxCounted bounds what RowsBefore counts: the purge only needs to know
// there is something, and says how much.
const maxCounted = 1_000_000

// RowsBefore counts the rows of hours that start before t (at most a
// million): what a purge at retention.traffic would remove. The purger
// asks it, so that an hour past its retention is removed even when
// nothing else is.
func (p *Projection) RowsBefore(ctx context.Context, t time.Time) (int, error) {
	n := 0
	err := p.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bHours)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && n < maxCounted; k, _ = c.Next() {
			if len(k) < 8 || int64(binary.BigEndian.Uint64(k[:8])) >= t.Unix() {
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

// Unclosed lists the listeners whose last recorded window was not their
// final one (serve stopped without closing it: a crash or a kill), with
// when that window ended: the flows of at most one window after it were
// lost. serve says so when it starts.
func (p *Projection) Unclosed() []Gap {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []Gap
	for src, r := range p.sources {
		if !r.Final && !r.Finished.IsZero() {
			out = append(out, Gap{Source: src, Last: r.Finished})
		}
	}
	slices.SortFunc(out, func(a, b Gap) int { return strings.Compare(a.Source, b.Source) })
	return out
}
