package projections

import bolt "go.etcd.io/bbolt"

// DB is where a projection runs transactions of its own (a
// runner.Chunker's parts): the store (store.Store, whose Update fails
// the store when a commit fails, as a failed append does), or a bare
// bbolt file in tests.
type DB interface {
	View(fn func(*bolt.Tx) error) error
	Update(fn func(*bolt.Tx) error) error
}

// MappedReleaser is a DB that can drop the file's pages from the
// process's memory map (store.Store.ReleaseMapped). A projection that
// writes a large event in parts releases them after each part, so that
// the pages one part read are not still counted in the process's
// resident set while the next part reads others.
type MappedReleaser interface {
	ReleaseMapped() (int64, error)
}
