// Package fanout runs one query per item with bounded concurrency: the
// shape every name resolver of a sweep shares (one lookup per host, at
// most N at once, no new lookup once the sweep is cancelled).
package fanout

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Each calls query(i) for every i in [0, n), at most limit calls at once
// (a limit below 1 counts as 1). It starts no new call once ctx is done
// and returns after every call it started has returned, so it leaves no
// goroutine behind. query must honour ctx itself; it reports its outcome
// through whatever it closes over (typically a slice indexed by i).
func Each(ctx context.Context, n, limit int, query func(i int)) {
	var g errgroup.Group
	g.SetLimit(max(limit, 1))
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			// g.Go may have waited for a slot while ctx ended.
			if ctx.Err() == nil {
				query(i)
			}
			return nil
		})
	}
	g.Wait()
}
