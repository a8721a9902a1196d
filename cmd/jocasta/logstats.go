package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/store"
)

// logStats are the log's statistics (store.LogStats) and the earliest
// instant the inventory's history can show (at=, /api/diff, whatif's
// --since): a retention purge cuts the history before the log is
// compacted, so it can be later than the oldest kept event.
type logStats struct {
	store.LogStats
	// HistoryFrom is that instant; nil when the inventory is not there
	// to ask.
	HistoryFrom *time.Time `json:"history_from"`
}

// logStatser reads the log's statistics: the database itself (core), or
// a running serve over its control socket.
type logStatser interface {
	LogStats(ctx context.Context) (logStats, error)
}

// LogStats reads the open database (core).
func (c *core) LogStats(ctx context.Context) (logStats, error) {
	st, err := c.st.Stats(ctx)
	if err != nil {
		return logStats{}, err
	}
	out := logStats{LogStats: st}
	var from time.Time
	if c.inv == nil {
		// Opened read-only: what the inventory stored.
		err = c.st.DB().View(func(tx *bolt.Tx) error {
			from, _ = inventory.StoredHistoryFrom(tx)
			return nil
		})
	} else {
		if c.sync != nil {
			if err := c.sync(ctx, st.Head); err != nil {
				return logStats{}, fmt.Errorf("log stats: %w", err)
			}
		}
		from, err = c.inv.HistoryFrom(ctx)
	}
	if err != nil {
		return logStats{}, fmt.Errorf("log stats: the history's start: %w", err)
	}
	// Rows from the start: the first kept event is the earliest instant
	// with anything to show.
	if from.IsZero() {
		if st.Oldest == nil {
			return out, nil
		}
		from = *st.Oldest
	}
	from = from.UTC()
	out.HistoryFrom = &from
	return out, nil
}

// LogStats asks serve.
func (s *socketAdmin) LogStats(ctx context.Context) (logStats, error) {
	return call[logStats](ctx, s, "log/stats", struct{}{})
}

// logStatsOp is the control socket's log/stats.
func logStatsOp(a admin) func(context.Context) (logStats, error) {
	return func(ctx context.Context) (logStats, error) {
		ls, ok := a.(logStatser)
		if !ok {
			return logStats{}, errors.New("log stats: not available")
		}
		return ls.LogStats(ctx)
	}
}

func cmdLogStats(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("log stats", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("log stats", pos, 0, ""); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openReadOnly, func(a admin) error {
		ls, ok := a.(logStatser)
		if !ok {
			return errors.New("log stats: not available")
		}
		st, err := ls.LogStats(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, st)
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintf(w, "events\t%d (seq %d to %d), %s\n", st.Events, st.First, st.Head, byteSize(st.Bytes))
		if st.Oldest != nil {
			fmt.Fprintf(w, "oldest kept\t%s\nnewest\t%s\n", fmtTime(st.Oldest), fmtTime(st.Newest))
		}
		if st.HistoryFrom != nil {
			fmt.Fprintf(w, "history from\t%s (the earliest instant at=, diffs and whatif can show)\n", fmtTime(st.HistoryFrom))
		}
		if st.Compacted {
			fmt.Fprintf(w, "compacted\tyes: events before seq %d were removed behind a snapshot\n", st.First)
		} else {
			fmt.Fprintf(w, "compacted\tno\n")
		}
		fmt.Fprintf(w, "snapshots\t%d\n", len(st.Snapshots))
		for _, s := range st.Snapshots {
			fmt.Fprintf(w, "\tseq %d at %s, %s\n", s.Seq, fmtTime(&s.Time), byteSize(int64(s.Bytes)))
		}
		fmt.Fprintf(w, "file\t%s\n\nkind\tevents\tbytes\n", byteSize(st.FileSize))
		for _, k := range st.Kinds {
			fmt.Fprintf(w, "%s\t%d\t%s\n", k.Kind, k.Events, byteSize(k.Bytes))
		}
		fmt.Fprintf(w, "\nday\tevents\tbytes\n")
		for _, d := range st.Days {
			fmt.Fprintf(w, "%s\t%d\t%s\n", d.Day, d.Events, byteSize(d.Bytes))
		}
		fmt.Fprintf(w, "\nbucket\tkeys\tin use\n")
		for _, b := range st.Buckets {
			fmt.Fprintf(w, "%s\t%d\t%s\n", b.Name, b.Keys, byteSize(int64(b.InUse)))
		}
		return w.Flush()
	})
}
