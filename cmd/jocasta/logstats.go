package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/jocasta/jocasta/store"
)

// logStatser reads the log's statistics: the database itself (core), or
// a running serve over its control socket.
type logStatser interface {
	LogStats(ctx context.Context) (store.LogStats, error)
}

// LogStats reads the open database (core).
func (c *core) LogStats(ctx context.Context) (store.LogStats, error) { return c.st.Stats(ctx) }

// LogStats asks serve.
func (s *socketAdmin) LogStats(ctx context.Context) (store.LogStats, error) {
	return call[store.LogStats](ctx, s, "log/stats", struct{}{})
}

// logStatsOp is the control socket's log/stats.
func logStatsOp(a admin) func(context.Context) (store.LogStats, error) {
	return func(ctx context.Context) (store.LogStats, error) {
		ls, ok := a.(logStatser)
		if !ok {
			return store.LogStats{}, errors.New("log stats: not available")
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
