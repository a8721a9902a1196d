// Package presence is the presence clock, a job beside the inventory:
// when an online device passes the online window, it appends a
// clock.ticked event so that the inventory evaluates presence at that
// time, and a replay evaluates it at the same time again. It reads only
// the inventory's next deadline and appends nothing while nothing is due.
package presence
