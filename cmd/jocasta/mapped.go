package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/store"
)

// releaseEvery is how often serve drops the database's pages and its own
// executable's from its memory map (store.ReleaseMapped,
// executablePages). Reads map them again from the page cache with a
// minor fault, so a short interval costs little, and it bounds the file
// pages counted in serve's resident set to what a few seconds of work
// touched: without it, every page the load, the traffic windows and the
// API's range reads touched stays counted (about 100 MB of the database
// and 25 MB of the executable at 10,000 devices and 1,000 peers per
// hour).
const releaseEvery = 5 * time.Second

// releaseMapped returns the heap the load freed to the kernel and
// releases the mapped pages once loaded returns (the projections' load
// and catch-up read the whole file and run most of the code once), then
// every interval until ctx ends. A failure is logged once, not fatal:
// the pages are the kernel's to reclaim anyway.
func releaseMapped(ctx context.Context, st *store.Store, loaded func(context.Context) error, interval time.Duration, log zerolog.Logger) error {
	if loaded(ctx) != nil {
		return nil // ctx ended
	}
	// The load's garbage (a first start builds every projection from the
	// log) is returned to the kernel now rather than over the minutes the
	// collector and the scavenger would take when serve is idle. Two
	// collections: the first only moves what sync.Pools hold (bbolt's
	// page buffers of the load's writes, 16 MB after a first start at
	// 10,000 devices) to their victim caches, the second frees it.
	runtime.GC()
	debug.FreeOSMemory()
	exe, err := findExecutablePages()
	if err != nil {
		log.Warn().Err(err).Msg("could not find the executable's mapped pages; they stay counted in the resident set until the kernel reclaims them")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	warnedDB, warnedExe := false, false
	for {
		if _, err := st.ReleaseMapped(); err != nil && !warnedDB && ctx.Err() == nil {
			log.Warn().Err(err).Msg("could not release the database's mapped pages; they stay counted in the resident set until the kernel reclaims them")
			warnedDB = true
		}
		if err := exe.release(); err != nil && !warnedExe {
			log.Warn().Err(err).Msg("could not release the executable's mapped pages; they stay counted in the resident set until the kernel reclaims them")
			warnedExe = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
