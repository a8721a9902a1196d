package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Defaults for [Options].
const (
	DefaultLockTimeout = 2 * time.Second
	DefaultMaxBatch    = 1024
)

// pageSize is the bbolt page size of new files (an existing file keeps
// its own). A typical sweep.completed is about 1.5 KB: 4 KiB pages hold
// two (2,060 bytes of pages per event), 16 KiB pages ten (1,650), at no
// measurable cost in append latency or throughput.
const pageSize = 16 << 10

// initialMmapSize is how much bbolt maps of the file at open, whatever
// its size: address space, not memory (a page counts in the resident set
// only once read). bbolt remaps when the file outgrows its mapping
// (doubling up to 1 GiB, then 1 GiB at a time), and a remap inside a
// write first copies every key and value the transaction holds onto the
// heap (node.dereference: 6.4 MB when a flow window's event was appended
// as the file passed 64 MB, at serve's peak) and waits for every
// reader. 1 GiB on 64-bit systems; 32-bit ones, with 3 GB of address
// space, keep bbolt's doubling.
const initialMmapSize = (1 << 30) * (strconv.IntSize / 64) // 0 on 32-bit

// Options configures [Open]. The zero value is the production setting.
type Options struct {
	// LockTimeout is how long Open waits for a database locked by another
	// process before it fails with ErrLocked. Default 2s.
	LockTimeout time.Duration
	// NoSync turns off fsync on commit and when the file grows.
	// Benchmarks and files synced once complete (the output of replay)
	// only; never in production, where an acknowledged append must
	// survive a crash.
	NoSync bool
	// MaxBatch is the most append requests one group commit takes.
	// Default 1024.
	MaxBatch int
	// Registry holds the kinds Append accepts. Default events.Default.
	Registry *events.Registry
	// MustExist refuses to create the file: a missing one is an error
	// wrapping ErrNoDatabase, an empty (0-byte) one an error wrapping
	// ErrCorrupt. Admin commands set it, so that a mistyped db.path is
	// reported instead of answered from a new, empty database.
	MustExist bool
	// ReadOnly opens the file read-only (a shared lock; implies
	// MustExist): nothing is written, not even the file mode, and every
	// append fails with ErrReadOnly. For commands that only read the log
	// (log verify, log export, log tail).
	ReadOnly bool
}

// setDefaults fills zero fields.
func (o *Options) setDefaults() {
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Registry == nil {
		o.Registry = events.Default
	}
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	if o.LockTimeout < 0 {
		errs = append(errs, fmt.Errorf("lock_timeout %s: must not be negative", o.LockTimeout))
	}
	if o.MaxBatch < 0 {
		errs = append(errs, fmt.Errorf("max_batch %d: must not be negative", o.MaxBatch))
	}
	return errors.Join(errs...)
}

// Store is the append-only, hash-chained event log in one bbolt file. It
// is safe for concurrent use.
type Store struct {
	path string
	db   *bolt.DB
	reg  *events.Registry

	// closeMu guards closed and sends on reqs, so Close can close reqs
	// once no sender is left.
	closeMu sync.RWMutex
	closed  bool
	reqs    chan *request
	done    chan struct{} // closed when the writer goroutine has exited
	maxB    int

	// writeMu serialises every write transaction that moves head (the
	// writer's batches, CopyLog into this store) and guards headHash.
	writeMu  sync.Mutex
	headHash string

	head atomic.Uint64
	// commitObserver is told of every commit that appended events
	// (SetCommitObserver).
	commitObserver atomic.Pointer[func(events int, took time.Duration)]
	first          atomic.Uint64 // anchor seq + 1

	hooksMu sync.Mutex
	hooks   []func(head uint64)

	// compactMu keeps Verify from walking a log that Compact is cutting.
	compactMu sync.RWMutex

	// failed is closed, and failErr set, when a commit fails: see Failed.
	failOnce sync.Once
	failed   chan struct{}
	failErr  error

	readOnly bool // opened with Options.ReadOnly
}

// Failed is closed when a commit has failed (a write or fsync error, a
// full disk). bbolt cannot be trusted after that: a failed fsync may
// still have reached the disk, and its in-memory state may no longer
// match the file. So the store refuses every later append with ErrFailed
// and the process should exit and let its supervisor start it again;
// opening the file afresh settles what was written. Err says why.
func (s *Store) Failed() <-chan struct{} { return s.failed }

// Err is the commit error that failed the store, or nil.
func (s *Store) Err() error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return nil
	}
}

// fail marks the store failed with err (the first failure wins).
func (s *Store) fail(err error) {
	s.failOnce.Do(func() {
		s.failErr = err
		close(s.failed)
	})
}

// Open opens or creates the log at path. It creates the parent directory
// (0700) and the file (0600) when missing. A file locked by another
// process gives an error wrapping ErrLocked after opts.LockTimeout; a file
// that is not a bbolt database, is truncated or breaks the log's
// invariants gives an error wrapping ErrCorrupt, and is never modified.
func Open(path string, opts Options) (*Store, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if opts.ReadOnly {
		opts.MustExist = true
	}
	if opts.MustExist {
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("store: open %s: %w", path, ErrNoDatabase)
		case err != nil:
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		case info.Mode().IsRegular() && info.Size() == 0:
			return nil, fmt.Errorf("store: open %s: the file is empty (0 bytes), not a jocasta database: %w", path, ErrCorrupt)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: create directory: %w", path, err)
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return nil, fmt.Errorf("store: open %s: is a directory", path)
	case err == nil && info.Size() > 0:
		// Look before bbolt writes anything: a read-only open never
		// touches the file, and it catches damage bbolt itself would
		// only notice with a fault (a truncated file) or not at all.
		if err := precheck(path, opts.LockTimeout); err != nil {
			return nil, err
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	db, err := openBolt(path, &bolt.Options{
		Timeout:         opts.LockTimeout,
		NoSync:          opts.NoSync,
		NoGrowSync:      opts.NoSync,
		FreelistType:    bolt.FreelistMapType,
		PageSize:        pageSize,
		ReadOnly:        opts.ReadOnly,
		InitialMmapSize: initialMmapSize,
	})
	if err != nil {
		return nil, classifyOpenErr(path, err, false)
	}
	if !opts.ReadOnly {
		if err := tightenMode(path); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	st, err := loadState(db)
	if err == nil && st.fresh && opts.ReadOnly {
		err = fmt.Errorf("the file holds no event log (a fresh or foreign bbolt file): %w", ErrCorrupt)
	}
	if err == nil && st.fresh {
		err = db.Update(initBuckets)
		if err == nil {
			st, err = loadState(db)
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, classifyOpenErr(path, err, false)
	}

	s := &Store{
		path:     path,
		db:       db,
		reg:      opts.Registry,
		reqs:     make(chan *request, opts.MaxBatch),
		done:     make(chan struct{}),
		maxB:     opts.MaxBatch,
		headHash: st.headHash,
		failed:   make(chan struct{}),
		readOnly: opts.ReadOnly,
	}
	s.head.Store(st.head)
	s.first.Store(st.anchor.Seq + 1)
	go s.writer()
	return s, nil
}

// loadState runs checkStructure on the open file, after checking the file
// holds every page its meta page claims.
func loadState(db *bolt.DB) (readState, error) {
	var st readState
	err := safeView(db, func(tx *bolt.Tx) error {
		if err := checkSize(db.Path(), tx); err != nil {
			return err
		}
		var err error
		st, err = checkStructure(tx)
		return err
	})
	return st, err
}

// precheck opens path read-only (no write can happen) and checks it.
func precheck(path string, timeout time.Duration) error {
	db, err := openBolt(path, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return classifyOpenErr(path, err, true)
	}
	_, err = loadState(db)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return classifyOpenErr(path, err, true)
	}
	return nil
}

// checkSize fails when the file is shorter than the pages the current meta
// page counts: reading those pages would fault.
func checkSize(path string, tx *bolt.Tx) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if need := tx.Size(); need > info.Size() {
		return fmt.Errorf("%w: file is %d bytes but holds %d bytes of pages (truncated)", ErrCorrupt, info.Size(), need)
	}
	return nil
}

// openBolt is bolt.Open that turns a panic or memory fault inside bbolt
// (which a damaged file can cause) into ErrCorrupt and releases the file.
func openBolt(path string, o *bolt.Options) (db *bolt.DB, err error) {
	var file *os.File
	o.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close() // releases the lock; the mapping, if any, leaks
			}
			db, err = nil, fmt.Errorf("%w: bbolt: %s", ErrCorrupt, oneLine(fmt.Sprint(r)))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return bolt.Open(path, 0o600, o)
}

// safeView is db.View that turns a panic or memory fault while reading a
// damaged page into ErrCorrupt.
func safeView(db *bolt.DB, fn func(*bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt: %s", ErrCorrupt, oneLine(fmt.Sprint(r)))
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return db.View(fn)
}

// classifyOpenErr maps an open error to ErrLocked, ErrCorrupt or a plain
// I/O error, as one line naming the path. In the read-only precheck any
// error that is not the operating system's is damage.
func classifyOpenErr(path string, err error, precheck bool) error {
	var pe *fs.PathError
	var errno syscall.Errno
	osErr := errors.As(err, &pe) || errors.As(err, &errno)
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("store: open %s: %w (is jocasta serve running?)", path, ErrLocked)
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrSchemaVersion):
		return fmt.Errorf("store: open %s: %w", path, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), precheck && !osErr:
		return fmt.Errorf("store: open %s: %w: %w", path, ErrCorrupt, err)
	default:
		return fmt.Errorf("store: open %s: %w", path, err)
	}
}

// tightenMode makes a pre-existing file that others can read owner-only.
func tightenMode(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return os.Chmod(path, 0o600)
	}
	return nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// Close waits for queued appends to commit (durably), stops the writer and
// closes the file. Later calls return nil; other methods return ErrClosed.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.closeMu.Unlock()
	<-s.done
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// isClosed reports whether Close has been called.
func (s *Store) isClosed() bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closed
}

// DB returns the bbolt handle. Projections keep their own buckets in the
// same file; they must not write the store's buckets except through this
// package's functions.
func (s *Store) DB() *bolt.DB { return s.db }

// Path returns the file's path as given to Open.
func (s *Store) Path() string { return s.path }

// OnCommit registers fn to run after every durable commit that moved head,
// with the new head. Hooks run on the writer goroutine, outside any
// transaction, in commit order, after the appenders have been answered; a
// slow hook delays the next commit, so ring a doorbell and return.
func (s *Store) OnCommit(fn func(head uint64)) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.hooks = append(s.hooks, fn)
}

// runHooks calls every hook with head.
func (s *Store) runHooks(head uint64) {
	s.hooksMu.Lock()
	hooks := s.hooks
	s.hooksMu.Unlock()
	for _, fn := range hooks {
		fn(head)
	}
}
