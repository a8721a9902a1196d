package events

import "time"

// KindTrafficRecorded records one flush window of a flow listener
// (plugins.flowlistener): its flows aggregated into compact rows, and the
// listener's state. One event per listener per window (60 s), never one
// per flow or packet.
const KindTrafficRecorded = "traffic.recorded"

// TrafficRecorded is the payload of traffic.recorded.
type TrafficRecorded struct {
	ScanID   string    `json:"scan_id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Complete is false for a window cut short by a stop.
	Complete bool     `json:"complete"`
	Errors   []string `json:"errors,omitempty"`
	// Listen is the listener's bound address, RcvBuf the socket receive
	// buffer the kernel granted (bytes, as it reports them).
	Listen string `json:"listen"`
	RcvBuf int    `json:"rcvbuf,omitempty"`
	// First marks the first window after the listener started, Final the
	// last one of a clean stop: a First after a window without Final means
	// the window in between was lost (a crash).
	First     bool              `json:"first,omitempty"`
	Final     bool              `json:"final,omitempty"`
	Datagrams uint64            `json:"datagrams"`
	Flows     uint64            `json:"flows"`
	LostFlows uint64            `json:"lost_flows"`
	Drops     map[string]uint64 `json:"drops,omitempty"`
	Exporters []TrafficExporter `json:"exporters"`
	// Rows are written packed (v2, see [TrafficRows]); v1's array of
	// objects is still read.
	Rows TrafficRows `json:"rows"`
}

// TrafficExporter is one exporter's state in a window.
type TrafficExporter struct {
	Addr      string `json:"addr"`
	Versions  []int  `json:"versions,omitempty"`
	Domains   int    `json:"domains"`
	Templates int    `json:"templates"`
	Datagrams uint64 `json:"datagrams"`
	Flows     uint64 `json:"flows"`
	LostFlows uint64 `json:"lost_flows"`
	Sampling  uint32 `json:"sampling"`
	// Restarts counts the exporter's restarts in the window (its sequence
	// started again); Held the data sets waiting for their template at
	// its end. Both are left out when 0 (and in logs of before them).
	Restarts uint64 `json:"restarts,omitempty"`
	Held     int    `json:"held,omitempty"`
}

// TrafficRow is the total of one window's flows from S to D with one
// protocol and service port. v1 wrote each as a JSON object with short
// keys; v2 packs them all (see [TrafficRows]).
type TrafficRow struct {
	Src     string `json:"s"`
	Dst     string `json:"d"`
	Proto   uint8  `json:"p"`
	Port    uint16 `json:"port,omitempty"`
	Bytes   uint64 `json:"b"`
	Packets uint64 `json:"n"`
	Flows   uint64 `json:"f"`
}
