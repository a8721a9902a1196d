package routerapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// leaseSeenWithin is how recent a lease's last-seen must be for the
// lease alone to count as a sighting.
const leaseSeenWithin = 5 * time.Minute

// Reader reads one RouterOS device (a sources.Poller): GET calls only,
// never a write.
type Reader struct {
	cfg Config
	c   *client
	log *slog.Logger
	now func() time.Time
	n   uint64
}

// New returns the reader of one instance. cfg has been validated by the
// loader (host set, port filled in).
func New(cfg Config, log *slog.Logger) (*Reader, error) {
	if cfg.Host == "" {
		return nil, errors.New("routerapi: host is required")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
		if cfg.SSL {
			cfg.Port = DefaultTLSPort
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reader{cfg: cfg, c: newClient(cfg), log: log, now: time.Now}, nil
}

// Rows of the tables, in the shapes RouterOS sends (every value a string).
type (
	leaseRow struct {
		MAC          rosString `json:"mac-address"`
		ActiveMAC    rosString `json:"active-mac-address"`
		Address      rosString `json:"address"`
		ActiveAddr   rosString `json:"active-address"`
		HostName     rosString `json:"host-name"`
		Comment      rosString `json:"comment"`
		Status       rosString `json:"status"`
		LastSeen     rosString `json:"last-seen"`
		Disabled     rosString `json:"disabled"`
		Blocked      rosString `json:"blocked"`
		ExpiresAfter rosString `json:"expires-after"`
	}
	arpRow struct {
		MAC      rosString `json:"mac-address"`
		Address  rosString `json:"address"`
		Status   rosString `json:"status"`
		Complete rosString `json:"complete"`
		Invalid  rosString `json:"invalid"`
		Disabled rosString `json:"disabled"`
		Comment  rosString `json:"comment"`
	}
	bridgeHostRow struct {
		MAC         rosString `json:"mac-address"`
		OnInterface rosString `json:"on-interface"`
		Local       rosString `json:"local"`
		Invalid     rosString `json:"invalid"`
		Disabled    rosString `json:"disabled"`
	}
	regRow struct {
		MAC            rosString `json:"mac-address"`
		Interface      rosString `json:"interface"`
		SSID           rosString `json:"ssid"`
		Band           rosString `json:"band"`
		Signal         rosString `json:"signal"`
		SignalStrength rosString `json:"signal-strength"`
		LastIP         rosString `json:"last-ip"`
	}
	interfaceRow struct {
		MAC rosString `json:"mac-address"`
	}
	identity struct {
		Name rosString `json:"name"`
	}
	resource struct {
		BoardName rosString `json:"board-name"`
		Version   rosString `json:"version"`
	}
)

// wirelessMenus are the registration tables of the wireless packages, any
// of which a device may have (RouterOS 7.13+ wifi, wifiwave2 up to 7.12,
// the legacy wireless package, the legacy CAPsMAN controller).
var wirelessMenus = []string{
	"interface/wifi/registration-table",
	"interface/wifiwave2/registration-table",
	"interface/wireless/registration-table",
	"caps-man/registration-table",
}

// Poll reads the device once (sources.Poller).
func (r *Reader) Poll(ctx context.Context) (sources.Result, error) {
	r.n++
	// One connection for the read's requests, closed after it: a poll
	// leaves nothing running, and the router logs one login per read.
	defer r.c.http.CloseIdleConnections()
	started := r.now().UTC()
	read := &sources.HostRead{ScanID: fmt.Sprintf("%d-%d", started.UnixNano(), r.n), Started: started}
	var set sources.HostSet
	var failed []error
	fail := func(err error) { failed = append(failed, err) }

	// The identity first: cheap, and it proves the credentials.
	var id identity
	if err := r.c.get(ctx, "system/identity", "", &id); err != nil {
		return nil, err
	}
	read.Peer.Name = strings.TrimSpace(string(id.Name))
	var res resource
	if err := r.c.get(ctx, "system/resource", "board-name,version", &res); err != nil {
		if fatal(err) || ctx.Err() != nil {
			return nil, err
		}
		fail(err)
	} else {
		read.Peer.Model = strings.TrimSpace(string(res.BoardName))
	}

	steps := []func() error{
		func() error { return r.readOutside(ctx, read) },
		func() error { return r.readInterfaces(ctx, read) },
	}
	if !r.cfg.TopologyOnly {
		steps = append(steps,
			func() error { return r.readLeases(ctx, read, &set) },
			func() error { return r.readARP(ctx, read, &set) },
			func() error { return r.readNeighbours6(ctx, read, &set) },
		)
	}
	steps = append(steps, func() error { return r.readBridgeHosts(ctx, read, &set) })
	for _, m := range wirelessMenus {
		steps = append(steps, func() error { return r.readRegistrations(ctx, m, read, &set) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			if ctx.Err() != nil || fatal(err) {
				failed = append(failed, err)
				break
			}
			fail(err)
		}
	}
	slices.Sort(read.Peer.MACs)
	read.Peer.MACs = slices.Compact(read.Peer.MACs)
	read.Hosts = set.Hosts()
	read.Finished = r.now().UTC()
	read.Complete = len(failed) == 0
	for _, err := range failed {
		read.Errors = append(read.Errors, err.Error())
	}
	if len(failed) > 0 {
		return read, errors.Join(failed...)
	}
	return read, nil
}

func (r *Reader) readInterfaces(ctx context.Context, read *sources.HostRead) error {
	var rows []interfaceRow
	if err := r.c.get(ctx, "interface", "mac-address", &rows); err != nil {
		return err
	}
	read.Rows += len(rows)
	for _, row := range rows {
		if m := sources.NormalizeMAC(string(row.MAC)); m != "" {
			read.Peer.MACs = append(read.Peer.MACs, m)
		}
	}
	return nil
}

func (r *Reader) readLeases(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var rows []leaseRow
	if err := r.c.get(ctx, "ip/dhcp-server/lease", "mac-address,active-mac-address,address,active-address,host-name,comment,status,last-seen,disabled,blocked,expires-after", &rows); err != nil {
		return err
	}
	r.applyLeases(rows, read, set)
	return nil
}

func (r *Reader) applyLeases(rows []leaseRow, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(rows)
	for _, row := range rows {
		if row.Disabled.bool() {
			continue
		}
		mac := row.ActiveMAC
		if mac == "" {
			mac = row.MAC
		}
		h := set.Host(string(mac))
		if h == nil {
			continue
		}
		addr := row.ActiveAddr
		if addr == "" {
			addr = row.Address
		}
		if ip, err := netip.ParseAddr(string(addr)); err == nil {
			h.AddIP(ip)
		}
		h.SetName(sources.NameDHCP, string(row.HostName))
		h.SetName(sources.NameRouter, string(row.Comment))
		if ago, ok := parseDuration(string(row.LastSeen)); ok && row.Status == "bound" && ago <= leaseSeenWithin {
			h.Seen = true
		}
	}
}

// neighbourSeen reports whether a neighbour entry's state says the host
// answered recently. Stale and permanent entries say nothing about now.
func neighbourSeen(status string, complete bool) bool {
	switch status {
	case "reachable", "delay", "probe":
		return true
	case "":
		return complete
	}
	return false
}

// neighbourFailed reports an entry that names no host: failed or
// incomplete resolution.
func neighbourFailed(status string) bool {
	return status == "failed" || status == "incomplete" || status == "noarp"
}

func (r *Reader) readARP(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var rows []arpRow
	if err := r.c.get(ctx, "ip/arp", "mac-address,address,status,complete,invalid,disabled,comment", &rows); err != nil {
		return err
	}
	r.applyARP(rows, read, set)
	return nil
}

func (r *Reader) applyARP(rows []arpRow, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(rows)
	for _, row := range rows {
		if row.Invalid.bool() || row.Disabled.bool() || neighbourFailed(string(row.Status)) {
			continue
		}
		h := set.Host(string(row.MAC))
		if h == nil {
			continue
		}
		if ip, err := netip.ParseAddr(string(row.Address)); err == nil {
			h.AddIP(ip)
		}
		h.SetName(sources.NameRouter, string(row.Comment))
		if neighbourSeen(string(row.Status), row.Complete.bool()) {
			h.Seen = true
		}
	}
}

func (r *Reader) readNeighbours6(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var rows []arpRow
	err := r.c.get(ctx, "ipv6/neighbor", "mac-address,address,status", &rows)
	if notInstalled(err) {
		return nil // IPv6 disabled
	}
	if err != nil {
		return err
	}
	r.applyNeighbours6(rows, read, set)
	return nil
}

func (r *Reader) applyNeighbours6(rows []arpRow, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(rows)
	for _, row := range rows {
		if neighbourFailed(string(row.Status)) {
			continue
		}
		h := set.Host(string(row.MAC))
		if h == nil {
			continue
		}
		if ip, err := netip.ParseAddr(string(row.Address)); err == nil {
			h.AddIP(ip)
		}
		if neighbourSeen(string(row.Status), false) {
			h.Seen = true
		}
	}
}

func (r *Reader) readBridgeHosts(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var rows []bridgeHostRow
	err := r.c.get(ctx, "interface/bridge/host", "mac-address,on-interface,local,invalid,disabled", &rows)
	if notInstalled(err) {
		return nil
	}
	if err != nil {
		return err
	}
	r.applyBridgeHosts(rows, read, set)
	return nil
}

func (r *Reader) applyBridgeHosts(rows []bridgeHostRow, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(rows)
	for _, row := range rows {
		if row.Local.bool() {
			// The device's own ports.
			if m := sources.NormalizeMAC(string(row.MAC)); m != "" {
				read.Peer.MACs = append(read.Peer.MACs, m)
			}
			continue
		}
		if row.Invalid.bool() || row.Disabled.bool() {
			continue
		}
		h := set.Host(string(row.MAC))
		if h == nil {
			continue
		}
		if h.SSID == "" {
			h.Port = strings.TrimSpace(string(row.OnInterface))
		}
		h.Seen = true
	}
}

func (r *Reader) readRegistrations(ctx context.Context, menu string, read *sources.HostRead, set *sources.HostSet) error {
	var rows []regRow
	err := r.c.get(ctx, menu, "", &rows)
	if notInstalled(err) {
		return nil // that wireless package is not installed
	}
	if err != nil {
		return err
	}
	r.applyRegistrations(rows, read, set)
	return nil
}

func (r *Reader) applyRegistrations(rows []regRow, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(rows)
	for _, row := range rows {
		h := set.Host(string(row.MAC))
		if h == nil {
			continue
		}
		h.Seen = true
		h.Port = strings.TrimSpace(string(row.Interface))
		h.SSID = strings.TrimSpace(string(row.SSID))
		h.Band = strings.TrimSpace(string(row.Band))
		sig := row.Signal
		if sig == "" {
			sig = row.SignalStrength // legacy: "-62@6Mbps"
		}
		h.Signal = parseSignal(string(sig))
		if !r.cfg.TopologyOnly {
			if ip, err := netip.ParseAddr(string(row.LastIP)); err == nil {
				h.AddIP(ip)
			}
		}
	}
}

// parseSignal reads a dBm value ("-58", "-62@6Mbps"), 0 when there is
// none or it is not plausible.
func parseSignal(s string) int {
	if i := strings.IndexByte(s, '@'); i >= 0 {
		s = s[:i]
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < -150 || n > 0 {
		return 0
	}
	return n
}
