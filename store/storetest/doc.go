// Package storetest gives tests a real store in a temporary directory.
//
// # Overview
//
// [Open] opens a [store.Store] under t.TempDir and registers a cleanup
// that runs bbolt's consistency check over the whole file (every page
// reachable once, no page both used and free, keys in order) and fails the
// test on any finding, then closes the store. A test that closed the store
// itself still gets the check: the cleanup reopens the file read-only.
//
// # Caveats
//
// The check reads every page, so keep stores in tests small.
package storetest
