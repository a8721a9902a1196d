// Package notify is the home of the notification dispatcher (a reactor
// that follows the change feed, projections/inventory.ChangesAfter, from
// its own checkpoint) and of its delivery channels, one sub-package each:
// httpnotify (a request whose body is a Go text/template) and webhook
// (Standard Webhooks signatures); push (ntfy) comes with the dispatcher.
// What the configuration loader checks and what the dispatcher runs are
// the same functions, so `config check` accepts exactly what is sent.
package notify
