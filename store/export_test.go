package store

// SaveSnapshotTx lets the external tests snapshot at a bare seq; the
// runner snapshots through SaveSnapshotOfTx.
var SaveSnapshotTx = saveSnapshotAt

// SetCopyByteBounds sets CopyLogFunc's byte bounds of a part and a
// transaction; the returned func restores them.
func SetCopyByteBounds(part, chunk int) func() {
	p, c := fnPartBytes, fnChunkBytes
	fnPartBytes, fnChunkBytes = part, chunk
	return func() { fnPartBytes, fnChunkBytes = p, c }
}
