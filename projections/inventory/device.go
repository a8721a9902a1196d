package inventory

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jocasta/jocasta/projections"
)

// nameOrder is the precedence of name sources for a device's best name:
// names given by infrastructure the user runs (DNS, DHCP, the router)
// before names devices give themselves (mDNS, NetBIOS, DNS-SD, SSDP).
// Sources not listed come after, in alphabetical order.
var nameOrder = []string{"dns", "dhcp", "router", "mdns", "netbios", "dnssd", "ssdp"}

// nameRank returns the precedence of a name source, lower is better.
func nameRank(src string) int {
	if i := slices.Index(nameOrder, src); i >= 0 {
		return i
	}
	return len(nameOrder)
}

// nameRec is one source's name for a device.
type nameRec struct {
	Name          string    `json:"name"`
	LastConfirmed time.Time `json:"last_confirmed"`
}

// addrRec is one address a device has had.
type addrRec struct {
	IP        string     `json:"ip"`
	Network   string     `json:"network,omitempty"`
	FirstSeen time.Time  `json:"first_seen"`
	LastSeen  time.Time  `json:"last_seen"`
	RetiredAt *time.Time `json:"retired_at,omitempty"`

	ip netip.Addr // parsed IP, memory only
}

// portRec is one open TCP port of a device.
type portRec struct {
	Port      uint16    `json:"port"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// evid is the evidence of one field: which source set or confirmed it
// last, who (for user edits) and when.
type evid struct {
	Source string    `json:"source"`
	Actor  string    `json:"actor,omitempty"`
	Time   time.Time `json:"time"`
}

// srcEvid is the evidence of a field only sources set: an evid without
// an actor, its source as a sourceID and its time held as seconds since
// January 1 of year 1 and nanoseconds, in UTC. It takes 16 bytes instead
// of evid's 56, and every device carries eight (BenchmarkLoadedHeap10k:
// 384 heap bytes less a device than evid, 128 less than with the
// source's name in each).
type srcEvid struct {
	sec  int64 // 0 (with nsec 0): the zero time
	nsec int32
	src  sourceID
}

// unixToInternal is time.Time{}.Unix(): seconds from year 1 to 1970.
const unixToInternal = 62135596800

// srcEvidOf is the evidence that src set or confirmed a field at t.
func srcEvidOf(src string, t time.Time) srcEvid {
	return srcEvid{src: sourceIDOf(src), sec: t.Unix() + unixToInternal, nsec: int32(t.Nanosecond())}
}

// evid is e as an evid, its time in UTC (the zero time when unset).
func (e srcEvid) evid() evid {
	return evid{Source: e.src.name(), Time: e.time()}
}

// source is the name of the source that gave e, "" for none.
func (e srcEvid) source() string { return e.src.name() }

// time is when the evidence was given, in UTC.
func (e srcEvid) time() time.Time {
	return time.Unix(e.sec-unixToInternal, int64(e.nsec)).UTC()
}

// after reports whether e was given after o.
func (e srcEvid) after(o srcEvid) bool {
	return e.sec > o.sec || (e.sec == o.sec && e.nsec > o.nsec)
}

// evidenceSet holds the evidence of every field that has one. Its JSON
// form (evidenceJSON) is one object of every field that has evidence.
type evidenceSet struct {
	Name      srcEvid
	MAC       srcEvid
	Addresses srcEvid
	LastSeen  srcEvid
	Presence  srcEvid
	Ports     srcEvid
	Services  srcEvid
	UPnP      srcEvid
	// user holds the evidence of the fields only a user sets: nil until
	// the device's first edit, which most devices never get (it would
	// be a third of a device's memory).
	user *userEvidence
}

// userEvidence is the evidence of the fields a user edits.
type userEvidence struct {
	Label   evid
	Group   evid
	Type    evid
	Notes   evid
	Ignored evid
	Watched evid
}

// edits returns the evidence of the user's fields, to be set.
func (e *evidenceSet) edits() *userEvidence {
	if e.user == nil {
		e.user = &userEvidence{}
	}
	return e.user
}

// evidenceJSON is the stored form of an evidenceSet.
type evidenceJSON struct {
	Name      evid `json:"name,omitzero"`
	MAC       evid `json:"mac,omitzero"`
	Addresses evid `json:"addresses,omitzero"`
	LastSeen  evid `json:"last_seen,omitzero"`
	Presence  evid `json:"presence,omitzero"`
	Ports     evid `json:"ports,omitzero"`
	Services  evid `json:"services,omitzero"`
	UPnP      evid `json:"upnp,omitzero"`
	Label     evid `json:"label,omitzero"`
	Group     evid `json:"group,omitzero"`
	Type      evid `json:"type,omitzero"`
	Notes     evid `json:"notes,omitzero"`
	Ignored   evid `json:"ignored,omitzero"`
	Watched   evid `json:"watched,omitzero"`
}

// MarshalJSON writes the set as evidenceJSON.
func (e evidenceSet) MarshalJSON() ([]byte, error) {
	j := evidenceJSON{Name: e.Name.evid(), MAC: e.MAC.evid(), Addresses: e.Addresses.evid(), LastSeen: e.LastSeen.evid(),
		Presence: e.Presence.evid(), Ports: e.Ports.evid(), Services: e.Services.evid(), UPnP: e.UPnP.evid()}
	if u := e.user; u != nil {
		j.Label, j.Group, j.Type, j.Notes, j.Ignored, j.Watched = u.Label, u.Group, u.Type, u.Notes, u.Ignored, u.Watched
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads evidenceJSON.
func (e *evidenceSet) UnmarshalJSON(b []byte) error {
	var j evidenceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	of := func(v evid) srcEvid { return srcEvidOf(v.Source, v.Time) }
	*e = evidenceSet{Name: of(j.Name), MAC: of(j.MAC), Addresses: of(j.Addresses), LastSeen: of(j.LastSeen),
		Presence: of(j.Presence), Ports: of(j.Ports), Services: of(j.Services), UPnP: of(j.UPnP)}
	if u := (userEvidence{j.Label, j.Group, j.Type, j.Notes, j.Ignored, j.Watched}); u != (userEvidence{}) {
		e.user = &u
	}
	return nil
}

// evidenceField is one field of an evidenceSet under its API name.
type evidenceField struct {
	name string
	ev   evid
}

// fields lists the evidence under its API field names, in evidenceJSON's
// order (an array, so listing allocates nothing). Setting one is done on
// the set's fields (those of a user's edit through edits).
func (e *evidenceSet) fields() [14]evidenceField {
	u := e.user
	if u == nil {
		u = &userEvidence{}
	}
	return [14]evidenceField{
		{"name", e.Name.evid()}, {"mac", e.MAC.evid()}, {"addresses", e.Addresses.evid()}, {"last_seen", e.LastSeen.evid()},
		{"presence", e.Presence.evid()}, {"ports", e.Ports.evid()}, {"services", e.Services.evid()}, {"upnp", e.UPnP.evid()},
		{"label", u.Label}, {"group", u.Group}, {"type", u.Type}, {"notes", u.Notes},
		{"ignored", u.Ignored}, {"watched", u.Watched},
	}
}

// upnpRec is what a device's SSDP description said.
type upnpRec struct {
	FriendlyName string `json:"friendly_name,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
	ModelName    string `json:"model_name,omitempty"`
}

// device is the stored and in-memory state of one device. The JSON form
// is the row in the devices bucket; fields without a tag below the
// marker are memory only and rebuilt by Load.
type device struct {
	ID  string `json:"id"`
	Key string `json:"key"` // identity: "m/<mac>" or "i/<ip>"
	MAC string `json:"mac,omitempty"`

	Names    nameSet `json:"names,omitempty"`
	BestName string  `json:"best_name,omitempty"`

	Label   *string `json:"label,omitempty"`
	Group   *string `json:"group,omitempty"`
	Type    *string `json:"type,omitempty"`
	Notes   *string `json:"notes,omitempty"`
	Ignored bool    `json:"ignored,omitempty"`
	Watched bool    `json:"watched,omitempty"`

	Presence string `json:"presence"`
	// Overdue: online, past the window, waiting for evidence of absence.
	Overdue bool `json:"overdue,omitempty"`

	FirstSeen time.Time             `json:"first_seen"`
	LastSeen  time.Time             `json:"last_seen"`
	Addrs     []*addrRec            `json:"addresses"`
	Ports     []portRec             `json:"ports,omitempty"`
	Services  []projections.Service `json:"services,omitempty"`
	UPnP      *upnpRec              `json:"upnp,omitempty"`
	Sources   []string              `json:"sources,omitempty"`
	// SeenBy is each source's last sighting of the device: which sources
	// can say it is gone (see hasEvidence).
	SeenBy seenSet `json:"seen_by,omitempty"`
	// Attached is where it hangs off, as a plugin source said.
	Attached *attachRec  `json:"attached,omitempty"`
	Evidence evidenceSet `json:"evidence"`

	// Memory only.
	heapIdx int    // index in the presence heap, -1 when not in it
	sortKey string // lower-case name for sort=name
	vendor  string // from Options.Vendor
	current netip.Addr
	slot    int // the device's place in the document cache (Inventory.docs), see docSlots
	// coverage is set while the device is overdue and no source that saw
	// it lately can give evidence (Inventory.refreshCoverage).
	coverage *projections.Coverage
	// otherMACs, of a merged group's view (unionOf), are the members'
	// MACs other than the one it shows: q= finds the group by any.
	otherMACs []string
}

// protected reports whether a user's edit keeps the device from retention.
func (d *device) protected() bool {
	return d.Label != nil || d.Group != nil || d.Type != nil || d.Notes != nil || d.Ignored || d.Watched
}

// addr returns the device's record of ip, or nil.
func (d *device) addr(ip string) *addrRec {
	for _, a := range d.Addrs {
		if a.IP == ip {
			return a
		}
	}
	return nil
}

// currentAddr is the most recently seen address that is not retired (the
// most recently seen of all when every one is retired), nil when none.
func (d *device) currentAddr() *addrRec {
	var best *addrRec
	for _, a := range d.Addrs {
		switch {
		case best == nil:
			best = a
		case (best.RetiredAt != nil) != (a.RetiredAt != nil):
			if a.RetiredAt == nil {
				best = a
			}
		case a.LastSeen.After(best.LastSeen) || (a.LastSeen.Equal(best.LastSeen) && a.IP < best.IP):
			best = a
		}
	}
	return best
}

// name is the API's name: the best resolved name, else the current IP.
func (d *device) name() string {
	if d.BestName != "" {
		return d.BestName
	}
	if a := d.currentAddr(); a != nil {
		return a.IP
	}
	return d.ID
}

// display is how summaries call the device: its label, else its name.
func (d *device) display() string {
	if d.Label != nil && *d.Label != "" {
		return *d.Label
	}
	return d.name()
}

// computeBestName returns the name of the best source, "" when none.
func (d *device) computeBestName() string {
	name, _ := d.bestName()
	return name
}

// bestName returns the best name and its source ("", "" when none).
func (d *device) bestName() (name, source string) {
	for _, n := range d.Names {
		if n.Val.Name == "" {
			continue
		}
		if name == "" || nameRank(n.Src) < nameRank(source) ||
			(nameRank(n.Src) == nameRank(source) && n.Src < source) {
			name, source = n.Val.Name, n.Src
		}
	}
	return name, source
}

// addSource records src among the device's sources (sorted set).
func (d *device) addSource(src string) bool {
	if src == "" {
		return false
	}
	i, found := slices.BinarySearch(d.Sources, src)
	if found {
		return false
	}
	d.Sources = slices.Insert(d.Sources, i, src)
	return true
}

// refreshDerived recomputes the memory-only vendor and sort fields.
func (d *device) refreshDerived(vendor func(net.HardwareAddr) string) {
	d.vendor = ""
	if d.MAC != "" && vendor != nil {
		if hw, err := net.ParseMAC(d.MAC); err == nil {
			d.vendor = vendor(hw)
		}
	}
	if a := d.currentAddr(); a != nil {
		d.current = a.ip
	} else {
		d.current = netip.Addr{}
	}
	d.sortKey = strings.ToLower(d.name())
}

// appendSearch appends the lower-case text q= searches: the name, every
// name by source, the label, every address, the MAC and the vendor, one
// per line. It is built when a search needs it (see haystack), not kept
// on the device.
func appendSearch(b []byte, d *device) []byte {
	start := len(b)
	b = append(b, d.sortKey...)
	for _, n := range d.Names {
		b = append(b, '\n')
		b = append(b, n.Val.Name...)
	}
	if d.Label != nil {
		b = append(b, '\n')
		b = append(b, *d.Label...)
	}
	for _, a := range d.Addrs {
		b = append(b, '\n')
		b = append(b, a.IP...)
	}
	if d.MAC != "" {
		b = append(b, '\n')
		b = append(b, d.MAC...)
	}
	for _, m := range d.otherMACs {
		b = append(b, '\n')
		b = append(b, m...)
	}
	if d.vendor != "" {
		b = append(b, '\n')
		b = append(b, d.vendor...)
	}
	for i := start; i < len(b); i++ {
		switch c := b[i]; {
		case c >= utf8.RuneSelf:
			low := strings.ToLower(string(b[start:]))
			return append(b[:start], low...)
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// macRandom reports whether mac is locally administered (bit 0x02 of the
// first octet), as randomised MACs of phones and laptops are.
func macRandom(mac string) bool {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) == 0 {
		return false
	}
	return hw[0]&0x02 != 0
}

// deviceID derives the id of a device from its identity key and a
// collision counter: "d" + 16 lower-case base32 characters of SHA-256.
func deviceID(key string, n int) string {
	h := sha256.New()
	h.Write([]byte(key))
	if n > 0 {
		h.Write([]byte{0, byte(n >> 8), byte(n)})
	}
	sum := h.Sum(nil)
	return "d" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:10]))
}

// view builds the API form of d. The caller holds the read lock.
func (d *device) view() projections.Device {
	v := projections.Device{
		ID:        d.ID,
		Name:      d.name(),
		Names:     make(map[string]projections.Name, len(d.Names)),
		Label:     clonePtr(d.Label),
		Group:     clonePtr(d.Group),
		Type:      clonePtr(d.Type),
		Notes:     clonePtr(d.Notes),
		Ignored:   d.Ignored,
		Watched:   d.Watched,
		Presence:  d.Presence,
		FirstSeen: d.FirstSeen,
		LastSeen:  d.LastSeen,
		Addresses: make([]projections.Address, 0, len(d.Addrs)),
		Ports:     make([]projections.Port, 0, len(d.Ports)),
		Services:  make([]projections.Service, len(d.Services)),
		Sources:   append([]string{}, d.Sources...),
	}
	fields := d.Evidence.fields()
	n := 0
	for _, f := range fields {
		if !f.ev.Time.IsZero() || f.ev.Source != "" {
			n++
		}
	}
	v.Evidence = make(map[string]projections.Evidence, n)
	for _, n := range d.Names {
		v.Names[n.Src] = projections.Name{Name: n.Val.Name, LastConfirmed: n.Val.LastConfirmed}
	}
	if d.MAC != "" {
		m := d.MAC
		v.MAC = &m
		v.MACRandom = macRandom(d.MAC)
	}
	if d.vendor != "" {
		vd := d.vendor
		v.Vendor = &vd
	}
	for _, a := range sortedAddrs(d.Addrs) {
		v.Addresses = append(v.Addresses, projections.Address{
			IP: a.IP, Network: a.Network, FirstSeen: a.FirstSeen, LastSeen: a.LastSeen, RetiredAt: clonePtr(a.RetiredAt),
		})
	}
	for _, p := range d.Ports {
		v.Ports = append(v.Ports, projections.Port{
			Port: p.Port, Proto: "tcp", Service: serviceName(p.Port, d.Services), FirstSeen: p.FirstSeen, LastSeen: p.LastSeen,
		})
	}
	copy(v.Services, d.Services)
	if d.Attached != nil {
		v.AttachedTo = d.Attached.view()
	}
	if d.coverage != nil {
		c := *d.coverage
		v.Coverage = &c
	}
	if d.UPnP != nil {
		v.UPnP = &projections.UPnP{FriendlyName: d.UPnP.FriendlyName, Manufacturer: d.UPnP.Manufacturer, ModelName: d.UPnP.ModelName}
	}
	for _, f := range fields {
		if !f.ev.Time.IsZero() || f.ev.Source != "" {
			v.Evidence[f.name] = projections.Evidence{Source: f.ev.Source, Actor: f.ev.Actor, Time: f.ev.Time}
		}
	}
	return v
}

// sortedAddrs orders addresses for display: current ones first, each
// group most recently seen first, then by IP.
func sortedAddrs(in []*addrRec) []*addrRec {
	if len(in) < 2 {
		return in
	}
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b *addrRec) int {
		if (a.RetiredAt == nil) != (b.RetiredAt == nil) {
			if a.RetiredAt == nil {
				return -1
			}
			return 1
		}
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return a.ip.Compare(b.ip)
	})
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
