// Package history holds the types of the inventory as it was at an
// instant and of the difference between two instants: the answers of
// GET /api/devices?at=, GET /api/devices/{id}?at=, GET /api/stats?at= and
// GET /api/diff, and the orders of the list at an instant (Order: the
// live list's, but last_seen). The inventory projection
// (projections/inventory, at.go) computes them from its history rows;
// httpapi serves them. See docs/history.md for what the view at an
// instant covers and why.
package history
