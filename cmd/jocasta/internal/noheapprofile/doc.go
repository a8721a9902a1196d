// Package noheapprofile turns the Go runtime's heap profiling off for the
// process that imports it, as early in its start as a package can.
//
// The runtime samples one allocation in every 512 KiB (on average) for
// heap profiles unless the program cannot take one; jocasta never does,
// but a dependency (the embedded NATS server) imports net/http/pprof, so
// serve kept sampling: the profiler's hash table (1.4 MB, touched a page
// per new call stack) and its records filled as serve ran, and each
// sample cost an unwinding of the stack. This package has no imports but
// runtime, so Go initializes it among the first packages (in import path
// order among those whose imports are initialized); a sample taken before
// that, or the one each P takes when it notices the change, may make the
// table, which then stays as it was: a few records, not one per stack.
// A test run with -test.memprofile still profiles (testing sets the rate
// after the packages' init).
package noheapprofile
