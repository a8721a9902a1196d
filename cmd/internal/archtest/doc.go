// Package archtest holds the test that enforces jocasta's import rules: the
// data flows one way, sources → ingest → log → projections → API/UI, and
// only events/bus knows that watermill exists. See STYLE.md §3.3 and
// docs/architecture.md.
package archtest
