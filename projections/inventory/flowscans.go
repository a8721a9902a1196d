package inventory

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// trafficHeader is the part of a traffic.recorded the scan log shows:
// the listener's state over the window, not its rows (which the traffic
// projection reads).
type trafficHeader struct {
	ScanID    string                   `json:"scan_id"`
	Started   time.Time                `json:"started"`
	Finished  time.Time                `json:"finished"`
	Complete  bool                     `json:"complete"`
	Errors    []string                 `json:"errors"`
	Datagrams uint64                   `json:"datagrams"`
	Flows     uint64                   `json:"flows"`
	LostFlows uint64                   `json:"lost_flows"`
	Drops     map[string]uint64        `json:"drops"`
	Exporters []events.TrafficExporter `json:"exporters"`
}

// flowScanRow is the scan-log row of one flow window: kind "flows", the
// exporters heard as hosts, the flows as rows, drops and estimated loss
// said in words beside the errors.
func flowScanRow(ev events.Envelope, p *trafficHeader) (key, row []byte) {
	fin, start := p.Finished.UTC(), p.Started.UTC()
	if p.Finished.IsZero() {
		fin = ev.Time.UTC()
	}
	if p.Started.IsZero() {
		start = fin
	}
	errs := slices.Clone(p.Errors)
	if len(p.Drops) > 0 {
		var parts []string
		var total uint64
		for _, reason := range sortedKeys(p.Drops) {
			parts = append(parts, fmt.Sprintf("%s %d", reason, p.Drops[reason]))
			total += p.Drops[reason]
		}
		errs = append(errs, fmt.Sprintf("dropped %d datagrams (%s)", total, strings.Join(parts, ", ")))
	}
	if p.LostFlows > 0 {
		errs = append(errs, fmt.Sprintf("estimated %d flows lost (sequence gaps)", p.LostFlows))
	}
	id := p.ScanID
	if id == "" {
		id = ev.ID
	}
	return scanRow(ev.Seq, projections.Scan{
		ID: id, Source: ev.Source, Kind: "flows", Started: start, Finished: fin,
		DurationMS: fin.Sub(start).Milliseconds(), Networks: []string{}, ProbesSent: 0,
		HostsFound: len(p.Exporters), Rows: int(min(p.Flows, 1<<31-1)), Complete: p.Complete, Errors: nonNil(errs),
	})
}
