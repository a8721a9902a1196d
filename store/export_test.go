package store

// SaveSnapshotTx lets the external tests snapshot at a bare seq; the
// runner snapshots through SaveSnapshotOfTx.
var SaveSnapshotTx = saveSnapshotAt
