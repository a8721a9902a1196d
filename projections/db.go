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
