// Package ui will hold jocasta's web interface: server-rendered pages with
// sign-in sessions, the Tokens and Notifications pages, behind CSRF
// protection (see STYLE.md §3 and DECISIONS.md "Tokens, users, sessions").
//
// It is not built yet; no page is served. cmd/jocasta hands httpapi a nil
// UI handler, so every path outside /api answers a 404 problem. The import
// rules for ui are already enforced by cmd/internal/archtest: it may use
// events and projections types, never store, sources or httpapi.
package ui
