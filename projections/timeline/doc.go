// Package timeline reads a device's timeline: its change-log entries and,
// where recorded, its hourly traffic and DNS totals, merged into one list,
// newest first, paged by a cursor. GET /api/devices/{id}/timeline
// (httpapi) and the device page's Timeline section (ui) both show the
// items Read returns, so the two cannot drift apart (the page words an
// hour's totals in its own units, as its other sections do).
//
// # Overview
//
// It is not a projection: it keeps nothing and reads three read models
// through the small interfaces below (the inventory's change log,
// projections/traffic's hours and projections/dns's hours). Its own test
// checks paging and cursors; httpapi/timeline_test.go pages through every
// mix of the three streams with every small limit, and ui's
// timeline_test.go the device page over the real read models.
//
// # Concurrency
//
// Read is safe for concurrent use when its sources are.
package timeline
