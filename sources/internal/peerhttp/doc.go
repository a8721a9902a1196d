// Package peerhttp is what the source kinds read over HTTP(S) share: a
// client that keeps one connection to its peer, and errors that say what
// went wrong in words an admin acts on, with no secret in them.
package peerhttp
