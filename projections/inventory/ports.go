package inventory

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// wellKnown names common TCP ports (the IANA service names).
var wellKnown = map[uint16]string{
	20: "ftp-data", 21: "ftp", 22: "ssh", 23: "telnet", 25: "smtp", 53: "domain",
	67: "bootps", 80: "http", 88: "kerberos", 110: "pop3", 111: "sunrpc", 135: "msrpc",
	139: "netbios-ssn", 143: "imap", 161: "snmp", 179: "bgp", 389: "ldap", 443: "https",
	445: "microsoft-ds", 465: "submissions", 515: "printer", 548: "afp", 554: "rtsp",
	587: "submission", 631: "ipp", 636: "ldaps", 853: "domain-s", 873: "rsync",
	993: "imaps", 995: "pop3s", 1080: "socks", 1433: "ms-sql-s", 1883: "mqtt",
	1900: "upnp", 2049: "nfs", 3000: "http-alt", 3306: "mysql", 3389: "ms-wbt-server",
	3689: "daap", 5000: "upnp", 5060: "sip", 5353: "mdns", 5357: "wsdapi", 5432: "postgresql",
	5900: "vnc", 6379: "redis", 7000: "afs3-fileserver", 8000: "http-alt", 8008: "http-alt",
	8080: "http-alt", 8081: "http-alt", 8123: "home-assistant", 8443: "https-alt",
	8883: "secure-mqtt", 9000: "cslistener", 9090: "websm", 9100: "jetdirect",
	9200: "elasticsearch", 10000: "ndmp", 32400: "plex", 49152: "upnp", 62078: "iphone-sync",
}

// ServiceOf names the service usually behind a TCP port ("" when the
// table has none): the name at= shows, where the advertised services are
// not history.
func ServiceOf(port uint16) string { return wellKnown[port] }

// serviceName names a port: the DNS-SD service the device advertises on
// it ("_ipp._tcp" → "ipp"), else the well-known name, else "".
func serviceName(port uint16, advertised []projections.Service) string {
	for _, s := range advertised {
		if s.Port == port && s.Type != "" {
			t := strings.TrimPrefix(s.Type, "_")
			if j := strings.Index(t, "._"); j > 0 {
				t = t[:j]
			}
			return t
		}
	}
	return wellKnown[port]
}

// portRange is an inclusive range of ports.
type portRange struct{ lo, hi uint16 }

// errBadPorts is returned by parsePorts.
var errBadPorts = errors.New("bad port list")

// parsePorts parses a port list in range form ("22,80,8000-8100"). Spaces
// around items are allowed; an empty string is an empty list.
func parsePorts(s string) ([]portRange, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []portRange
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parsePort(lo)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", errBadPorts, item, err)
		}
		b := a
		if isRange {
			if b, err = parsePort(hi); err != nil {
				return nil, fmt.Errorf("%w: %q: %w", errBadPorts, item, err)
			}
			if b < a {
				return nil, fmt.Errorf("%w: %q: range runs backwards", errBadPorts, item)
			}
		}
		out = append(out, portRange{a, b})
	}
	return out, nil
}

func parsePort(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port 1-65535", s)
	}
	return uint16(n), nil
}

// inRanges reports whether p is in one of rs.
func inRanges(rs []portRange, p uint16) bool {
	for _, r := range rs {
		if p >= r.lo && p <= r.hi {
			return true
		}
	}
	return false
}

// portTouch is what one port scan found on one device.
type portTouch struct {
	d    *device
	open []uint16
	ips  []string
}

// portPrep is a portscan.completed decoded ahead of Apply.
type portPrep struct {
	p      *events.PortScanCompleted
	fin    time.Time
	probed []portRange
}

// preparePortScan parses a port scan's port list (an unparsable list
// closes no port but advertised ones).
func preparePortScan(ev events.Envelope, p *events.PortScanCompleted) *portPrep {
	pp := &portPrep{p: p, fin: p.Finished.UTC()}
	if p.Finished.IsZero() {
		pp.fin = ev.Time.UTC()
	}
	if rs, err := parsePorts(p.Ports); err == nil {
		pp.probed = rs
	}
	return pp
}

// applyPortScan folds a portscan.completed into the inventory. Each
// probed address belongs to the device that currently holds it; a port
// seen open is added (device.port_opened); a known port that was probed
// by a complete scan and found closed is removed (device.port_closed). An
// open port is a sighting of the device. Addresses no device holds are
// ignored.
func (i *Inventory) applyPortScan(em *emitter, pp *portPrep) error {
	ev := em.ev
	p, fin := pp.p, pp.fin
	probed := pp.probed

	var touched []*portTouch
	byDev := map[*device]*portTouch{}
	for _, r := range p.Results {
		ip, err := netip.ParseAddr(r.IP)
		if err != nil {
			continue
		}
		ipStr := ip.Unmap().String()
		d := i.currentHolder(ipStr)
		if d == nil {
			continue
		}
		t := byDev[d]
		if t == nil {
			t = &portTouch{d: d}
			byDev[d] = t
			touched = append(touched, t)
		}
		if len(r.Open) > 0 && !slices.Contains(t.ips, ipStr) {
			t.ips = append(t.ips, ipStr)
		}
		t.open = append(t.open, r.Open...)
	}
	for _, t := range touched {
		d := t.d
		slices.Sort(t.open)
		t.open = slices.Compact(t.open)
		t.open = slices.DeleteFunc(t.open, func(p uint16) bool { return p == 0 })
		for _, port := range t.open {
			j, ok := slices.BinarySearchFunc(d.Ports, port, func(r portRec, p uint16) int { return int(r.Port) - int(p) })
			if ok {
				d.Ports[j].LastSeen = fin
				continue
			}
			d.Ports = slices.Insert(d.Ports, j, portRec{Port: port, FirstSeen: fin, LastSeen: fin})
			if err := em.emit(projections.ChangePortOpened, d.ID,
				fmt.Sprintf("%s opened port %s", d.display(), portLabel(port, d.Services)), nil); err != nil {
				return err
			}
		}
		if p.Complete {
			var kept []portRec
			for _, pr := range d.Ports {
				closed := !slices.Contains(t.open, pr.Port) &&
					(inRanges(probed, pr.Port) || slices.ContainsFunc(d.Services, func(s projections.Service) bool { return s.Port == pr.Port }))
				if !closed {
					kept = append(kept, pr)
					continue
				}
				if err := em.emit(projections.ChangePortClosed, d.ID,
					fmt.Sprintf("%s closed port %s", d.display(), portLabel(pr.Port, d.Services)), nil); err != nil {
					return err
				}
			}
			d.Ports = kept
		}
		d.Evidence.Ports = srcEvidOf(ev.Source, fin)
		if len(t.open) > 0 {
			if err := i.portSighting(em, d, t.ips, fin); err != nil {
				return err
			}
		}
		i.markDirty(d)
	}
	return i.evaluate(em, fin, false)
}

// portSighting records that d answered on open ports at ips.
func (i *Inventory) portSighting(em *emitter, d *device, ips []string, at time.Time) error {
	for _, ip := range ips {
		if a := d.addr(ip); a != nil && at.After(a.LastSeen) {
			a.LastSeen = at
		}
	}
	if at.After(d.LastSeen) {
		d.LastSeen = at
		d.Evidence.LastSeen = srcEvidOf(em.ev.Source, at)
	}
	d.addSource(em.ev.Source)
	if d.current != d.currentAddrIP() {
		d.refreshDerived(i.opts.Vendor)
	}
	return i.markSeen(em, d, at)
}

// portLabel is "22/tcp (ssh)" or "40000/tcp".
func portLabel(port uint16, advertised []projections.Service) string {
	s := strconv.Itoa(int(port)) + "/tcp"
	if n := serviceName(port, advertised); n != "" {
		s += " (" + n + ")"
	}
	return s
}
