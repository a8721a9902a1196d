package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

// Replay rebuilds every projection from src's log into a fresh database
// at dstPath (which must not exist). The whole of an uncompacted log
// (until zero) is replayed by copying the database file and rebuilding
// every projection over the copy from the first event. Otherwise it
// copies the log up to until, and, when src was compacted, starts from the
// newest snapshot at or before until that the copied log continues; then
// it applies the rest of the log. The result is a complete database that
// `jocasta serve` can open. An until before the first event gives an
// empty inventory; an until older than what a compacted log can
// reproduce is an error wrapping ErrCompacted that names the earliest
// time that works. On error the output file is removed.
//
// projs must be fresh projections (not the ones serving src): Replay
// loads them from the new file.
func Replay(ctx context.Context, src *store.Store, dstPath string, until time.Time, projs []Projection, opts Options) (err error) {
	if _, err := os.Lstat(dstPath); err == nil {
		return fmt.Errorf("runner: replay into %s: %w", dstPath, ErrOutputExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("runner: replay into %s: %w", dstPath, err)
	}
	opts.setDefaults()
	began := time.Now()
	cloned := false
	if until.IsZero() {
		// The whole of an uncompacted log: copy the file in the kernel,
		// drop everything but the log (the source's projections,
		// checkpoints and snapshots) and rebuild every projection from
		// the first event.
		if cloned, err = src.CloneUncompacted(dstPath); err != nil {
			return fmt.Errorf("runner: replay: %w", err)
		}
		if cloned {
			opts.Log.Info("replay: copied the database file", "took", time.Since(began).Round(time.Millisecond).String())
		}
	}
	dst, err := store.Open(dstPath, store.Options{NoSync: true})
	if err != nil {
		if cloned {
			_ = os.Remove(dstPath)
		}
		return fmt.Errorf("runner: replay: %w", err)
	}
	defer func() {
		if cerr := dst.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("runner: replay: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(dstPath)
		}
	}()
	switch {
	case cloned:
		if err := dst.Update(store.ResetToLogTx); err != nil {
			return fmt.Errorf("runner: replay: %w", err)
		}
	case src.First() <= 1:
		// Nothing compacted, up to a time: apply while the log is being
		// copied.
		if err := copyAndApply(ctx, src, dst, until, projs, opts); err != nil {
			return err
		}
		return syncOutput(dst, dstPath, opts.Log)
	default:
		if _, err := src.CopyLog(dst, until); err != nil {
			return fmt.Errorf("runner: replay: %w", err)
		}
		if first := dst.First(); first > 1 {
			if err := restoreBase(ctx, src, dst, until, projs, opts); err != nil {
				return err
			}
		}
	}
	r, err := New(dst, projs, opts)
	if err != nil {
		return err
	}
	rebuilt := time.Now()
	if err := r.CatchUp(ctx); err != nil {
		return err
	}
	opts.Log.Info("replay: rebuilt the projections", "through_seq", dst.Head(), "took", time.Since(rebuilt).Round(time.Millisecond).String())
	return syncOutput(dst, dstPath, opts.Log)
}

// restoreBase starts a replay of a compacted log copied into dst from
// the snapshot the copy continues: its buckets, streamed in parts (a
// snapshot decoded whole and restored in one transaction held 1.3 GB
// for 90 days of 1,000 devices), then every projection's checkpoint at
// its seq.
func restoreBase(ctx context.Context, src, dst *store.Store, until time.Time, projs []Projection, opts Options) error {
	snap, err := replayBase(src, dst, until)
	if err != nil {
		return err
	}
	if err := dst.RestoreSnapshotBuckets(ctx, snap.Seq, nil); err != nil {
		return fmt.Errorf("runner: replay: %w", err)
	}
	err = dst.Update(func(tx *bolt.Tx) error {
		for _, p := range projs {
			if err := store.SetCheckpoint(tx, p.Name(), snap.Seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("runner: replay: restore snapshot %d: %w", snap.Seq, err)
	}
	opts.setDefaults()
	opts.Log.Info("replay: the log before the first kept event was compacted; starting from the snapshot", "first", dst.First(), "snapshot_seq", snap.Seq, "snapshot_time", snap.Time.Format(time.RFC3339))
	return nil
}

// syncOutput makes the finished output durable (it was written without
// fsync); the deferred cleanup closes it.
func syncOutput(dst *store.Store, dstPath string, log *slog.Logger) error {
	began := time.Now()
	if err := dst.DB().Sync(); err != nil {
		return fmt.Errorf("runner: replay: sync %s: %w", dstPath, err)
	}
	log.Info("replay: synced the output", "took", time.Since(began).Round(time.Millisecond).String())
	return nil
}

// copyAndApply copies an uncompacted log into dst on one goroutine and
// applies it on this one: the copy hands over the events it decoded (so
// the log is read once), cut into batches and prepared, while the batch
// before is applied.
func copyAndApply(ctx context.Context, src, dst *store.Store, until time.Time, projs []Projection, opts Options) error {
	r, err := New(dst, projs, opts)
	if err != nil {
		return err
	}
	if err := r.init(ctx); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	ch := make(chan *batch, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		send := func(b *batch) bool {
			select {
			case ch <- b:
				return true
			case <-cctx.Done():
				return false
			}
		}
		// The parts the copy hands over (8,192 events) are the batches,
		// cut to BatchSize and after each retention.purged as read
		// batches are.
		_, err := src.CopyLogFunc(dst, until, func(evs []events.Envelope) error {
			for len(evs) > 0 {
				n := min(len(evs), r.opts.BatchSize)
				for k, e := range evs[:n] {
					if e.Kind == events.KindRetentionPurged {
						n = k + 1
						break
					}
				}
				if !send(r.preparedBatch(evs[:n:n])) {
					return cctx.Err()
				}
				evs = evs[n:]
			}
			return nil
		})
		if err != nil {
			send(&batch{err: fmt.Errorf("runner: replay: %w", err)})
		}
	}()
	defer func() {
		cancel()
		for range ch { // unblock the copy
		}
		<-done
	}()
	for b := range ch {
		if b.err != nil {
			return b.err
		}
		if err := r.applyBatch(ctx, b); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Whatever was appended to dst besides the copy (nothing, normally).
	return r.catchUp(ctx)
}

// replayBase picks the snapshot a replay of a compacted log starts from:
// the newest one the copied log continues whose time is at or before
// until.
func replayBase(src, dst *store.Store, until time.Time) (store.SnapshotInfo, error) {
	first, head := dst.First(), dst.Head()
	infos, err := dst.Snapshots()
	if err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("runner: replay: %w", err)
	}
	for k := len(infos) - 1; k >= 0; k-- {
		in := infos[k]
		if in.Seq+1 >= first && in.Seq <= head && (until.IsZero() || !in.Time.After(until)) {
			return in, nil
		}
	}
	all, err := src.Snapshots()
	if err != nil {
		return store.SnapshotInfo{}, fmt.Errorf("runner: replay: %w", err)
	}
	for _, in := range all {
		if in.Seq+1 >= src.First() {
			t := in.Time.UTC().Format(time.RFC3339)
			return store.SnapshotInfo{}, fmt.Errorf("runner: replay: history before %s was compacted; the earliest replayable time is %s: %w", t, t, ErrCompacted)
		}
	}
	return store.SnapshotInfo{}, fmt.Errorf("runner: replay: the log before seq %d was compacted and no snapshot covers it: %w", src.First(), ErrNoSnapshot)
}
