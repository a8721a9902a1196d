// Package command is the one write side of jocasta: every change a
// person asks for (edit a device, watch it, merge devices or separate
// them (merge.go), create or revoke a token, add, change or remove an
// account, set notification rules) is a
// method of Commander, which validates it, decides it inside the log's
// append against the read models as of the log's head, and appends its
// event. The JSON API, the control socket (CLI), and later the web
// interface and the MCP endpoint call it; none of them builds an event
// payload itself.
//
// # Deciding inside the append
//
// A command reads the read models once they have applied the log's head,
// and its append goes through only if the head is still the same inside
// the write transaction (store.HeadTx); otherwise it reads again. So what
// it read was current when it appended: an edit that changes nothing
// appends nothing, and a name checked free is still free.
//
// # Errors
//
// Invalid input is an *Invalid listing each bad field (the API answers
// 400 naming them); a missing device is projections.ErrNotFound; a
// missing token or account, or a name already taken, is an *Refused with
// a sentence saying what to do. A failed commit is
// projections.ErrWriteFailed: its outcome is unknown.
package command
