package sources

import (
	"net/netip"
	"time"
)

// FlowWindow is what a flow listener (sources/flowlistener) hands over
// once per flush window: the flows of every accepted exporter aggregated
// in memory into compact rows, never one row per flow or packet, plus
// the listener's state. It lives here, beside the other results, because
// the ingest step may import the contract's types but never a kind.
type FlowWindow struct {
	ScanID   string
	Started  time.Time
	Finished time.Time
	// Complete is false for a window cut short by a stop.
	Complete bool
	Errors   []string
	// Listen is the address the listener is bound to.
	Listen string
	// First marks the first window after the listener started: the
	// window before it, if the previous run did not end with a Final
	// window, was lost (a crash loses at most one window).
	First bool
	// Final marks the last window of a clean stop.
	Final bool
	// RcvBuf is the socket receive buffer the kernel granted, in bytes.
	RcvBuf int
	// Datagrams accepted from exporters, and Flows decoded from them.
	Datagrams uint64
	Flows     uint64
	// Drops counts what was not turned into rows, by reason
	// ("not_exporter" datagrams, "no_template" sets, "malformed", ...).
	Drops map[string]uint64
	// LostFlows estimates the flows the exporters sent that never
	// arrived (sequence-number gaps).
	LostFlows uint64
	// Exporters is the state of each exporter heard from, by address.
	Exporters []FlowExporter
	// Rows are the aggregated flows, sorted by (Src, Dst, Proto, Port);
	// nil when there are none. The sink that records the window drops
	// them once they are in its event (they are most of its memory).
	Rows FlowRows
}

// NumRows is the number of the window's rows.
func (w *FlowWindow) NumRows() int {
	if w.Rows == nil {
		return 0
	}
	return w.Rows.Len()
}

// FlowRows are a window's rows, read one at a time. A listener hands
// over its table as it holds it rather than copied into a []FlowRow: a
// window of 166,667 rows (10,000 devices × 1,000 peers an hour) would be
// 13 MB more while it is recorded, serve's busiest moment.
type FlowRows interface {
	Len() int
	// Row returns the row i, 0 ≤ i < Len().
	Row(i int) FlowRow
}

// FlowRowList is FlowRows listed: small windows and tests.
type FlowRowList []FlowRow

// Len implements FlowRows.
func (l FlowRowList) Len() int { return len(l) }

// Row implements FlowRows.
func (l FlowRowList) Row(i int) FlowRow { return l[i] }

// Scan implements Result.
func (w *FlowWindow) Scan() ScanInfo {
	return ScanInfo{ID: w.ScanID, Started: w.Started, Finished: w.Finished, Complete: w.Complete, Errors: w.Errors}
}

// FlowRow is the total of the flows of one window from Src to Dst with
// one protocol and service port (the lower port of the pair, 0 for a
// protocol without ports). Bytes and Packets are scaled by the
// exporter's sampling interval; Flows counts records received.
type FlowRow struct {
	Src, Dst netip.Addr
	Proto    uint8
	Port     uint16
	Bytes    uint64
	Packets  uint64
	Flows    uint64
}

// FlowExporter is one exporter's state as a flow listener sees it.
type FlowExporter struct {
	Addr netip.Addr
	// Versions seen this window (5, 9, 10).
	Versions []int
	// Domains are the v9 source ids / IPFIX observation domains (and v5
	// engines) known, and Templates the templates held across them.
	Domains   int
	Templates int
	Datagrams uint64
	Flows     uint64
	LostFlows uint64
	// Sampling is the largest 1-in-N interval in force (1: unsampled).
	Sampling uint32
	// Restarts counts the exporter's restarts this window (its sequence
	// numbers started again); Held the data sets waiting for a template
	// at the window's end.
	Restarts uint64
	Held     int
}
