package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/store"
)

// backuper writes a consistent copy of the whole database: the database
// itself (core), or a running serve over its control socket.
type backuper interface {
	Backup(ctx context.Context, w io.Writer) (size int64, err error)
}

// Backup writes the open database (core).
func (c *core) Backup(ctx context.Context, w io.Writer) (int64, error) {
	var size int64
	err := c.st.WriteBackup(w, func(n int64) error { size = n; return nil })
	return size, err
}

// Backup asks serve for the copy; serve sends its size first
// (Content-Length), so a copy cut short is told from a whole one.
func (s *socketAdmin) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := s.post(ctx, "backup", struct{}{})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	want, err := strconv.ParseInt(resp.Header.Get("X-Jocasta-Backup-Size"), 10, 64)
	if err != nil {
		return 0, errors.New("control socket: backup: serve did not say the size of the copy")
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("control socket: backup cut short after %d of %d bytes: %w", n, want, err)
	}
	if n != want {
		return n, fmt.Errorf("control socket: backup cut short after %d of %d bytes", n, want)
	}
	return n, nil
}

// backupHandler serves POST /v1/backup on the control socket: the size
// in a header, then the bytes. An error after the first byte aborts the
// connection, so the client never takes a cut copy for a whole one.
func backupHandler(a admin, dbFile string, log zerolog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(dbHeader) != dbFile {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, "this control socket serves the database "+dbFile+", not "+r.Header.Get(dbHeader))
			return
		}
		c, ok := a.(*core)
		if !ok {
			http.Error(w, `{"error":"this serve cannot back up"}`, http.StatusInternalServerError)
			return
		}
		started := false
		err := c.st.WriteBackup(w, func(n int64) error {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("X-Jocasta-Backup-Size", strconv.FormatInt(n, 10))
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			w.WriteHeader(http.StatusOK)
			started = true
			return nil
		})
		if err != nil {
			log.Error().Err(err).Msg("control: backup failed")
			if started {
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":%q}`, err.Error())
			return
		}
		log.Info().Str("actor", peerFrom(r.Context())).Msg("control: backup written to the control socket")
	}
}

// peerFrom is the actor of a control request (see peerActor).
func peerFrom(ctx context.Context) string {
	if s, ok := ctx.Value(peerKey{}).(string); ok {
		return s
	}
	return "cli"
}

func cmdBackup(e *env, args []string) error {
	var cfgPath, output string
	var force bool
	fs := newFlags("backup", &cfgPath)
	fs.StringVar(&output, "output", "", "the backup file to write")
	fs.BoolVar(&force, "force", false, "replace an existing file")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("backup", pos, 0, ""); err != nil {
		return err
	}
	if output == "" {
		return usagef("backup needs --output FILE")
	}
	return withAdmin(e, cfgPath, openReadOnly, func(a admin) error {
		b, ok := a.(backuper)
		if !ok {
			return errors.New("backup: not available")
		}
		var size int64
		var rep store.VerifyReport
		err := store.WriteFileAtomic(output, force, func(f *os.File) error {
			n, err := b.Backup(e.ctx, f)
			size = n
			return err
		}, func(tmp string) error {
			var err error
			rep, err = store.CheckFile(e.ctx, tmp)
			if err != nil {
				return fmt.Errorf("the copy does not verify, not kept: %w", err)
			}
			return nil
		})
		switch {
		case errors.Is(err, iofs.ErrExist):
			return userErrorf("%s exists: choose another --output, or add --force to replace it", output)
		case err != nil:
			return fmt.Errorf("backup to %s: %w", output, err)
		}
		fmt.Fprintf(e.stdout, "backed up %s (%s, seq %d to %d, hash chain verified) to %s\n",
			plural(rep.Checked, "event"), byteSize(size), rep.First, rep.Head, output)
		return nil
	})
}

func cmdRestore(e *env, args []string) error {
	var cfgPath string
	var force bool
	fs := newFlags("restore", &cfgPath)
	fs.BoolVar(&force, "force", false, "replace the existing database")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("restore", pos, 1, "FILE"); err != nil {
		return err
	}
	src := pos[0]
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	dbFile := cfg.DBFile()
	if _, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg)); ok {
		return userErrorf("jocasta serve runs on %s: stop it first, then restore", dbFile)
	}
	rep, err := store.CheckFile(e.ctx, src)
	if err != nil {
		return userErrorf("%s cannot be restored: %v", src, err)
	}
	if _, err := os.Stat(dbFile); err == nil && !force {
		return userErrorf("%s exists: add --force to replace it with %s (a backup of it first is wise)", dbFile, src)
	}
	if err := os.MkdirAll(filepath.Dir(dbFile), 0o700); err != nil {
		return err
	}
	// The database lock: no admin command or serve may have it open.
	if st, err := openStoreWithin(cfg, lockTimeout, openExisting); err == nil {
		st.Close()
	} else if errors.Is(err, store.ErrLocked) {
		return userErrorf("%s is in use by another process: stop it first", dbFile)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	err = store.WriteFileAtomic(dbFile, true, func(f *os.File) error {
		_, err := io.Copy(f, in)
		return err
	}, func(tmp string) error {
		_, err := store.CheckFile(e.ctx, tmp)
		return err
	})
	if err != nil {
		return fmt.Errorf("restore %s: %w", dbFile, err)
	}
	fmt.Fprintf(e.stdout, "restored %s (seq %d to %d, hash chain verified) from %s\n", dbFile, rep.First, rep.Head, src)
	return nil
}

// byteSize says n bytes in a unit a person reads.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
