package rpcrouter

import (
	"bufio"
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

// ARPFile is the kernel's IPv4 neighbour table, read through rpcd's file
// object (the login's ACL must list it in its file scope).
const ARPFile = "/proc/net/arp"

// Reader reads one OpenWrt device over ubus (a sources.Poller): read
// calls only, never a write. It keeps its rpcd session across reads.
type Reader struct {
	cfg Config
	c   *client
	log *slog.Logger
	now func() time.Time
	n   uint64
	// outsideDenied is when the ACL last refused network.interface dump:
	// the call is not made again for outsideRetry (each refusal costs a
	// second login, see client.call).
	outsideDenied time.Time
}

// New returns the reader of one instance. cfg has been validated by the
// loader (host set, port filled in).
func New(cfg Config, log *slog.Logger) (*Reader, error) {
	if cfg.Host == "" {
		return nil, errors.New("rpcrouter: host is required")
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

// Replies of the calls (reference §4).
type (
	board struct {
		Hostname  string `json:"hostname"`
		Model     string `json:"model"`
		BoardName string `json:"board_name"`
	}
	deviceStatus struct {
		MAC string `json:"macaddr"`
	}
	leases struct {
		DHCP  []lease `json:"dhcp_leases"`
		DHCP6 []lease `json:"dhcp6_leases"`
	}
	lease struct {
		MAC      string   `json:"macaddr"`
		IP       string   `json:"ipaddr"`
		IP6      string   `json:"ip6addr"`
		IP6s     []string `json:"ip6addrs"`
		Hostname string   `json:"hostname"`
	}
	// hint is a host hint in either shape: ipaddrs/ip6addrs lists (current)
	// or ipv4/ipv6 strings (older builds).
	hint struct {
		IPs  []string `json:"ipaddrs"`
		IP6s []string `json:"ip6addrs"`
		IPv4 string   `json:"ipv4"`
		IPv6 string   `json:"ipv6"`
		Name string   `json:"name"`
	}
	fileData struct {
		Data string `json:"data"`
	}
	wifiDevices struct {
		Devices []string `json:"devices"`
	}
	wifiInfo struct {
		SSID      string `json:"ssid"`
		Frequency int    `json:"frequency"`
	}
	assocList struct {
		Results []struct {
			MAC    string `json:"mac"`
			Signal int    `json:"signal"`
		} `json:"results"`
	}
)

// Poll reads the device once (sources.Poller).
func (r *Reader) Poll(ctx context.Context) (sources.Result, error) {
	r.n++
	defer r.c.http.CloseIdleConnections()
	started := r.now().UTC()
	read := &sources.HostRead{ScanID: fmt.Sprintf("%d-%d", started.UnixNano(), r.n), Started: started}
	var set sources.HostSet
	var failed []error

	// The board first: it logs in and proves the credentials.
	var b board
	if err := r.c.call(ctx, "system", "board", nil, &b); err != nil {
		return nil, err
	}
	read.Peer.Name = strings.TrimSpace(b.Hostname)
	read.Peer.Model = strings.TrimSpace(b.Model)

	steps := []func() error{
		func() error { return r.readOutside(ctx, read) },
		func() error { return r.readDevices(ctx, read) },
	}
	if !r.cfg.TopologyOnly {
		steps = append(steps,
			func() error { return r.readLeases(ctx, read, &set) },
			func() error { return r.readHints(ctx, read, &set) },
			func() error { return r.readARP(ctx, read, &set) },
		)
	}
	steps = append(steps, func() error { return r.readWireless(ctx, read, &set) })
	for _, step := range steps {
		if err := step(); err != nil {
			failed = append(failed, err)
			if ctx.Err() != nil || fatal(err) {
				break
			}
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

func (r *Reader) readDevices(ctx context.Context, read *sources.HostRead) error {
	var devs map[string]deviceStatus
	if err := r.c.call(ctx, "network.device", "status", nil, &devs); err != nil {
		return err
	}
	read.Rows += len(devs)
	for _, d := range devs {
		if m := sources.NormalizeMAC(d.MAC); m != "" {
			read.Peer.MACs = append(read.Peer.MACs, m)
		}
	}
	return nil
}

func (r *Reader) readLeases(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var l leases
	if err := r.c.call(ctx, "luci-rpc", "getDHCPLeases", nil, &l); err != nil {
		return err
	}
	applyLeases(l, read, set)
	return nil
}

func applyLeases(l leases, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(l.DHCP) + len(l.DHCP6)
	for _, le := range append(l.DHCP, l.DHCP6...) {
		h := set.Host(le.MAC)
		if h == nil {
			continue // a DHCPv6 lease names a DUID, not always a MAC
		}
		for _, s := range append([]string{le.IP, le.IP6}, le.IP6s...) {
			if ip, err := netip.ParseAddr(s); err == nil {
				h.AddIP(ip)
			}
		}
		h.SetName(sources.NameDHCP, le.Hostname)
	}
}

func (r *Reader) readHints(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var hints map[string]hint
	if err := r.c.call(ctx, "luci-rpc", "getHostHints", nil, &hints); err != nil {
		return err
	}
	applyHints(hints, read, set)
	return nil
}

func applyHints(hints map[string]hint, read *sources.HostRead, set *sources.HostSet) {
	read.Rows += len(hints)
	for mac, hi := range hints {
		// A hint is what the router knows of a host (from its leases,
		// neighbours and /etc/ethers), not a sighting.
		h := set.Host(mac)
		if h == nil {
			continue
		}
		for _, s := range append(append(append([]string{}, hi.IPs...), hi.IP6s...), hi.IPv4, hi.IPv6) {
			if ip, err := netip.ParseAddr(s); err == nil {
				h.AddIP(ip)
			}
		}
		if h.Names[sources.NameDHCP] != strings.TrimSpace(hi.Name) {
			h.SetName(sources.NameRouter, hi.Name)
		}
	}
}

func (r *Reader) readARP(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var f fileData
	if err := r.c.call(ctx, "file", "read", map[string]any{"path": ARPFile}, &f); err != nil {
		var se *statusError
		if errors.As(err, &se) && se.Status == statusPermissionDenied {
			return fmt.Errorf("%w: add %q to the file scope of the ACL", err, ARPFile)
		}
		return err
	}
	applyARP(f.Data, read, set)
	return nil
}

// ARP entry flags of /proc/net/arp (linux/if_arp.h).
const (
	atfComplete  = 0x02
	atfPermanent = 0x04
)

// applyARP reads /proc/net/arp: "IP address HW type Flags HW address
// Mask Device" under one header line.
func applyARP(text string, read *sources.HostRead, set *sources.HostSet) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		read.Rows++
		flags, err := strconv.ParseUint(strings.TrimPrefix(f[2], "0x"), 16, 32)
		if err != nil || flags&atfComplete == 0 {
			continue // incomplete: names no host
		}
		h := set.Host(f[3])
		if h == nil {
			continue
		}
		if ip, err := netip.ParseAddr(f[0]); err == nil {
			h.AddIP(ip)
		}
		if flags&atfPermanent == 0 {
			h.Seen = true
		}
	}
}

func (r *Reader) readWireless(ctx context.Context, read *sources.HostRead, set *sources.HostSet) error {
	var devs wifiDevices
	err := r.c.call(ctx, "iwinfo", "devices", nil, &devs)
	var re *rpcError
	if errors.As(err, &re) && re.Code == codeObjectNotFound {
		return nil // no wireless: iwinfo is not installed
	}
	if err != nil {
		return err
	}
	slices.Sort(devs.Devices)
	for _, dev := range slices.Compact(devs.Devices) {
		if dev == "" || len(dev) > 64 {
			continue
		}
		var info wifiInfo
		if err := r.c.call(ctx, "iwinfo", "info", map[string]any{"device": dev}, &info); err != nil {
			return err
		}
		var al assocList
		if err := r.c.call(ctx, "iwinfo", "assoclist", map[string]any{"device": dev}, &al); err != nil {
			return err
		}
		read.Rows += len(al.Results)
		for _, c := range al.Results {
			h := set.Host(c.MAC)
			if h == nil {
				continue
			}
			h.Seen = true
			h.Port = dev
			h.SSID = strings.TrimSpace(info.SSID)
			h.Band = band(info.Frequency)
			if c.Signal < 0 && c.Signal >= -150 {
				h.Signal = c.Signal
			}
		}
	}
	return nil
}

// band names a radio's band by its frequency in MHz.
func band(mhz int) string {
	switch {
	case mhz >= 2400 && mhz < 2500:
		return "2.4GHz"
	case mhz >= 4900 && mhz < 5925:
		return "5GHz"
	case mhz >= 5925 && mhz < 7200:
		return "6GHz"
	}
	return ""
}
