// Package sweeptest is test support shared by the tests of the sweep
// packages (arpsweep, icmpsweep): the two sides of a fake socket
// ([SendLog] records and refuses sends, [Queue] hands out what the fake
// answers and honours read deadlines), and [DropNetRaw] to test what
// opening a socket does without CAP_NET_RAW.
//
// Only _test.go files import it.
package sweeptest
