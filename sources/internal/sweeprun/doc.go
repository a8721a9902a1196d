// Package sweeprun runs the sending side of an address sweep, for the
// ICMP and the ARP sweeps: pacing, rounds, back-pressure, and the
// lifetime of the goroutines that read the replies.
//
// # Overview
//
// A [Pacer] hands out send tokens from a golang.org/x/time/rate token
// bucket a batch at a time, so the limiter is consulted once per batch and
// nothing is allocated per address ([Pacer.Take]). [Pacer.Rounds] runs the
// rounds: a round after the first starts only while some address has not
// answered, and at least min(wait, [MaxRoundGap]) after the previous one
// started. [Pacer.Retry] pauses before a send that met back-pressure
// (ENOBUFS, EAGAIN) is tried again, the pause doubling, and drops the send
// after [GiveUpAfter].
// [Exchange] runs the readers of a set of sockets while the sender works,
// and stops them through read deadlines. [Sends] keeps what became of the
// sends to one network, for the result's errors.
//
// What a sweep sends, what counts as an answer and how failures are
// reported stay with each sweep package.
//
// # Concurrency
//
// A Pacer belongs to the sender goroutine, except [Pacer.Answered], which
// readers call.
package sweeprun
