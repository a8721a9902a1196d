// Package retention is the hourly retention job beside the inventory: it
// asks the inventory what the contract's windows remove now, appends one
// retention.purged event with that decision (so a replay removes the same
// records), waits for the projections to apply it, and compacts the log
// behind the newest snapshot older than the history window.
package retention
