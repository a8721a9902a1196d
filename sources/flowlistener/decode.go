package flowlistener

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"
)

// Drop reasons, the keys of FlowWindow.Drops.
const (
	dropNotExporter = iota // a datagram from an address not in exporters (never parsed)
	dropShort              // a datagram shorter than its header says
	dropVersion            // an unknown version
	dropMalformed          // a set or template whose lengths do not add up
	dropNoTemplate         // a data set whose template has not arrived, or did not within maxPendingAge (sets)
	dropExpired            // a data set whose template was not refreshed in time (sets)
	dropNoAddress          // a record without a source and destination of one family, both specified (records)
	dropLimits             // a template, domain or pending set over the limits
	dropTableFull          // a flow whose row did not fit the window's table (flows)
	nDrops
)

var dropNames = [nDrops]string{
	"not_exporter", "short", "version", "malformed", "no_template",
	"template_expired", "no_address", "limits", "table_full",
}

// Limits that keep a hostile exporter from growing memory without bound.
// Every length and count read from a datagram is checked against them
// before anything is allocated for it.
const (
	maxDomains        = 256  // domains (source ids, observation domains) per exporter
	maxTemplates      = 1024 // templates per domain
	maxTemplateFields = 256  // fields per template (real ones have fewer than 100)
	// maxExporterFields bounds the templates of one exporter across its
	// domains: each costs its fields plus templateOverhead (its header and
	// map entry), so both 256-field templates (252 of them) and 1-field
	// ones (13,107) fit in about 2 MiB.
	maxExporterFields = 1 << 16
	templateOverhead  = 4
	maxPendingSets    = 8 // data sets held per domain until their template arrives
	maxPendingBytes   = 32 << 10
	// maxPendingAge is how long a held data set waits for its template
	// (the default window): older ones are dropped as no_template, so a
	// held set is never decoded into a window long after it arrived.
	maxPendingAge = 60 * time.Second
)

// Sequence accounting: gap is the sequence number of a datagram minus the
// one expected (mod 2^32). Forward gaps below restartThreshold are loss;
// a step back of at most the late bound is a late (reordered or
// duplicated) datagram; anything else is an exporter restart.
const (
	restartThreshold = 1 << 24 // a forward jump larger than this is a restart, not loss
	// lateFlows: v5 and IPFIX count flows (records); 2^16 is over 2,000
	// full v5 datagrams of reordering, far below half the sequence space.
	lateFlows = 1 << 16
	// latePackets: v9 counts export packets.
	latePackets = 1 << 10
)

// Field kinds the decoder reads; every other field is skipped by length.
const (
	opSkip = iota
	opBytes
	opPackets
	opProto
	opSrcPort
	opDstPort
	opSrc4
	opDst4
	opSrc6
	opDst6
	opSamplerID
	opSamplingInterval // 34, 50 (v9 FLOW_SAMPLER_RANDOM_INTERVAL)
	opPacketInterval   // IPFIX 305 samplingPacketInterval
	opPacketSpace      // IPFIX 306 samplingPacketSpace
	opBytesTotal       // 85 octetTotalCount, used only without 1
	opPacketsTotal     // 86 packetTotalCount, used only without 2
	// opInIf is the input interface (INPUT_SNMP / ingressInterface, 10;
	// a v9 options scope of type 2), set when the template is read: a
	// sampling interval may be the interface's.
	opInIf
)

// fieldOp maps an information element (v9 and IPFIX share these ids) to
// what the decoder does with it.
func fieldOp(id uint16, enterprise bool) uint8 {
	if enterprise {
		return opSkip
	}
	switch id {
	case 1:
		return opBytes
	case 2:
		return opPackets
	case 4:
		return opProto
	case 7:
		return opSrcPort
	case 11:
		return opDstPort
	case 8:
		return opSrc4
	case 12:
		return opDst4
	case 27:
		return opSrc6
	case 28:
		return opDst6
	case 48, 302: // FLOW_SAMPLER_ID, selectorId
		return opSamplerID
	case 34, 50:
		return opSamplingInterval
	case 305:
		return opPacketInterval
	case 306:
		return opPacketSpace
	case 85:
		return opBytesTotal
	case 86:
		return opPacketsTotal
	}
	return opSkip
}

const varLen = 0xFFFF

// field is one field of a template (4 bytes).
type field struct {
	op     uint8
	length uint16 // varLen: variable (IPFIX)
}

// template is a (options) template of one domain.
type template struct {
	fields  []field
	fixed   bool // every field has a fixed length
	recLen  int  // fixed: the record length; else the shortest possible
	options bool
	scope   int // options: the number of scope fields (skipped)
	seen    time.Time
}

func newTemplate(fields []field, options bool, scope int, now time.Time) *template {
	t := &template{fields: fields, fixed: true, options: options, scope: scope, seen: now}
	off := 0
	for i := range t.fields {
		f := &t.fields[i]
		if f.length == varLen {
			t.fixed = false
			off++ // at least the one-byte length prefix
			continue
		}
		off += int(f.length)
	}
	t.recLen = off
	return t
}

// cost is what the template counts against maxExporterFields.
func (t *template) cost() int { return len(t.fields) + templateOverhead }

func (t *template) same(fields []field, options bool, scope int) bool {
	if t.options != options || t.scope != scope || len(t.fields) != len(fields) {
		return false
	}
	for i := range fields {
		if t.fields[i] != fields[i] {
			return false
		}
	}
	return true
}

// pendingSet is a data set held until its template arrives.
type pendingSet struct {
	id   uint16
	at   time.Time // when it arrived (maxPendingAge)
	data []byte
}

// domain is the state of one (exporter, version, source id / observation
// domain).
type domain struct {
	templates map[uint16]*template
	// sampling is the domain-wide 1-in-N interval (0: unknown), samplers
	// the intervals by sampler id, and ifRates by input interface (an
	// options record scoped to an interface).
	sampling uint32
	samplers map[uint32]uint32
	ifRates  map[uint32]uint32
	seqOK    bool
	nextSeq  uint32
	// lost is the loss counted for this domain this window: a late
	// datagram takes back at most this much.
	lost uint64
	// flowsPerPacket is a running average (v9 loss estimates: its
	// sequence counts packets).
	flowsPerPacket float64
	pending        []pendingSet
	pendingBytes   int
}

// exporter is the state of one accepted exporter address. Domains and
// templates carry over from window to window; the counters are this
// window's (endWindow resets them).
type exporter struct {
	addr      netip.Addr
	domains   map[uint64]*domain
	versions  uint8 // bit 0: v5, 1: v9, 2: IPFIX (this window)
	datagrams uint64
	flows     uint64
	lost      uint64
	restarts  uint64
	// fields is the cost of its templates across domains
	// (maxExporterFields).
	fields int
}

// endWindow resets the per-window counters.
func (ex *exporter) endWindow() {
	ex.datagrams, ex.flows, ex.lost, ex.restarts, ex.versions = 0, 0, 0, 0, 0
	for _, dm := range ex.domains {
		dm.lost = 0
	}
}

// held is the number of data sets waiting for their template.
func (ex *exporter) held() int {
	n := 0
	for _, dm := range ex.domains {
		n += len(dm.pending)
	}
	return n
}

func domainKey(version uint16, id uint32) uint64 { return uint64(version)<<32 | uint64(id) }

// decoder turns datagrams into flows. It is not safe for concurrent use.
type decoder struct {
	lifetime time.Duration // template lifetime without refresh
	drops    [nDrops]uint64
	flows    uint64
	lost     uint64
	sink     func(*flow)
	f        flow    // reused for every record
	scratch  []field // a template's fields as they are read
}

// flow is one decoded flow record.
type flow struct {
	src, dst         netip.Addr
	proto            uint8
	srcPort, dstPort uint16
	bytes, packets   uint64
}

// be reads a big-endian unsigned integer of 1 to 8 bytes (reduced-size
// encoding); longer values keep their last 8 bytes.
func be(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	case 8:
		return binary.BigEndian.Uint64(b)
	}
	if len(b) > 8 {
		b = b[len(b)-8:]
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// datagram decodes one datagram of an accepted exporter.
func (d *decoder) datagram(ex *exporter, b []byte, now time.Time) {
	ex.datagrams++
	if len(b) < 2 {
		d.drops[dropShort]++
		return
	}
	switch binary.BigEndian.Uint16(b) {
	case 5:
		ex.versions |= 1
		d.v5(ex, b)
	case 9:
		ex.versions |= 2
		d.v9(ex, b, now)
	case 10:
		ex.versions |= 4
		d.ipfix(ex, b, now)
	default:
		d.drops[dropVersion]++
	}
}

func (d *decoder) domain(ex *exporter, version uint16, id uint32) *domain {
	k := domainKey(version, id)
	if dm := ex.domains[k]; dm != nil {
		return dm
	}
	if len(ex.domains) >= maxDomains {
		return nil
	}
	dm := &domain{templates: map[uint16]*template{}}
	ex.domains[k] = dm
	return dm
}

// sequence accounts the sequence number seq of a datagram that advances
// the sequence by n (v5: flows, v9: 1 packet, IPFIX: data records); unit
// converts steps into flows (v9: flows per packet), and late is the
// largest step back that is a late datagram rather than a restart. A
// forward gap is counted as lost flows; a late datagram keeps the
// expected number and takes back the loss counted for it, as far as this
// window counted loss for the domain. It reports whether the datagram
// was late.
func (d *decoder) sequence(ex *exporter, dm *domain, seq, n uint32, unit float64, late uint32) bool {
	if dm.seqOK {
		gap := seq - dm.nextSeq
		switch {
		case gap == 0:
		case gap < restartThreshold:
			lost := uint64(float64(gap)*unit + 0.5)
			dm.lost += lost
			ex.lost += lost
			d.lost += lost
		case dm.nextSeq-seq <= late:
			back := min(uint64(float64(n)*unit+0.5), dm.lost)
			dm.lost -= back
			ex.lost -= back
			d.lost -= back
			return true
		default:
			ex.restarts++
		}
	}
	dm.seqOK, dm.nextSeq = true, seq+n
	return false
}

// v5 decodes a NetFlow v5 datagram.
func (d *decoder) v5(ex *exporter, b []byte) {
	const hdr, rec = 24, 48
	if len(b) < hdr {
		d.drops[dropShort]++
		return
	}
	count := int(binary.BigEndian.Uint16(b[2:]))
	if count == 0 || len(b) < hdr+count*rec {
		d.drops[dropShort]++
		return
	}
	seq := binary.BigEndian.Uint32(b[16:])
	dm := d.domain(ex, 5, uint32(b[20])<<8|uint32(b[21]))
	if dm == nil {
		d.drops[dropLimits]++
		return
	}
	d.sequence(ex, dm, seq, uint32(count), 1, lateFlows)
	scale := uint64(binary.BigEndian.Uint16(b[22:]) & 0x3FFF)
	if scale == 0 {
		scale = 1
	}
	dm.sampling = uint32(scale)
	f := &d.f
	for i := 0; i < count; i++ {
		r := b[hdr+i*rec : hdr+(i+1)*rec]
		if binary.BigEndian.Uint32(r[0:]) == 0 || binary.BigEndian.Uint32(r[4:]) == 0 {
			d.drops[dropNoAddress]++ // 0.0.0.0, as in v9 and IPFIX
			continue
		}
		f.src = netip.AddrFrom4([4]byte(r[0:4]))
		f.dst = netip.AddrFrom4([4]byte(r[4:8]))
		f.packets = uint64(binary.BigEndian.Uint32(r[16:])) * scale
		f.bytes = uint64(binary.BigEndian.Uint32(r[20:])) * scale
		f.srcPort = binary.BigEndian.Uint16(r[32:])
		f.dstPort = binary.BigEndian.Uint16(r[34:])
		f.proto = r[38]
		d.emit(ex)
	}
}

func (d *decoder) emit(ex *exporter) {
	ex.flows++
	d.flows++
	d.sink(&d.f)
}

// v9 decodes a NetFlow v9 datagram.
func (d *decoder) v9(ex *exporter, b []byte, now time.Time) {
	const hdr = 20
	if len(b) < hdr {
		d.drops[dropShort]++
		return
	}
	seq := binary.BigEndian.Uint32(b[12:])
	dm := d.domain(ex, 9, binary.BigEndian.Uint32(b[16:]))
	if dm == nil {
		d.drops[dropLimits]++
		return
	}
	_, flows, undecoded := d.sets(ex, dm, b[hdr:], false, now)
	// The average counts the packet's own flow records (not held ones
	// decoded now), and only when it could count them all.
	if n := float64(flows); !undecoded {
		if dm.flowsPerPacket == 0 {
			dm.flowsPerPacket = n
		} else if n > 0 {
			dm.flowsPerPacket += (n - dm.flowsPerPacket) / 16
		}
	}
	// The sequence counts export packets: a gap of k packets is about k
	// times the average flows per packet.
	d.sequence(ex, dm, seq, 1, dm.flowsPerPacket, latePackets)
}

// ipfix decodes an IPFIX message.
func (d *decoder) ipfix(ex *exporter, b []byte, now time.Time) {
	const hdr = 16
	if len(b) < hdr {
		d.drops[dropShort]++
		return
	}
	length := int(binary.BigEndian.Uint16(b[2:]))
	if length < hdr || length > len(b) {
		d.drops[dropShort]++
		return
	}
	b = b[:length]
	seq := binary.BigEndian.Uint32(b[8:])
	dm := d.domain(ex, 10, binary.BigEndian.Uint32(b[12:]))
	if dm == nil {
		d.drops[dropLimits]++
		return
	}
	records, _, undecoded := d.sets(ex, dm, b[hdr:], true, now)
	// The sequence counts data records sent before this message: the
	// message's own, options included, never held ones decoded now (they
	// belong to an earlier message). The next number is known only when
	// every data record of the message was counted.
	if undecoded {
		if !d.sequence(ex, dm, seq, 0, 1, lateFlows) {
			dm.seqOK = false
		}
		return
	}
	d.sequence(ex, dm, seq, uint32(records), 1, lateFlows)
}

// sets walks the (flow)sets of a v9 or IPFIX message. It returns the
// number of the message's data records (options included) and of its
// flow records, and whether some data records could not be counted (a
// set without template, or malformed).
func (d *decoder) sets(ex *exporter, dm *domain, b []byte, ipfix bool, now time.Time) (records, flows int, undecoded bool) {
	if len(dm.pending) > 0 {
		d.expirePending(dm, now)
	}
	tplID, optID := uint16(0), uint16(1)
	if ipfix {
		tplID, optID = 2, 3
	}
	for len(b) >= 4 {
		id := binary.BigEndian.Uint16(b)
		l := int(binary.BigEndian.Uint16(b[2:]))
		if l < 4 || l > len(b) {
			d.drops[dropMalformed]++
			return records, flows, true
		}
		body := b[4:l]
		b = b[l:]
		switch {
		case id == tplID:
			d.templates(ex, dm, body, ipfix, false, now)
		case id == optID:
			d.templates(ex, dm, body, ipfix, true, now)
		case id >= 256:
			n, options, ok := d.data(ex, dm, id, body, now, true)
			records += n
			if !options {
				flows += n
			}
			if !ok {
				undecoded = true
			}
		}
		// Set ids 2..255 (v9) and 0, 1, 4..255 (IPFIX) are reserved:
		// skipped by their length.
	}
	return records, flows, undecoded
}

// templates reads the template records of one (options) template set.
func (d *decoder) templates(ex *exporter, dm *domain, b []byte, ipfix, options bool, now time.Time) {
	for len(b) >= 4 {
		id := binary.BigEndian.Uint16(b)
		n := int(binary.BigEndian.Uint16(b[2:]))
		b = b[4:]
		scope := 0
		if options {
			if ipfix {
				if n == 0 { // withdrawal of an options template
					d.withdraw(ex, dm, id, true)
					continue
				}
				if len(b) < 2 {
					d.drops[dropMalformed]++
					return
				}
				scope = int(binary.BigEndian.Uint16(b))
				b = b[2:]
			} else {
				// v9: id, scope length, option length, both in bytes.
				if len(b) < 2 {
					d.drops[dropMalformed]++
					return
				}
				scopeLen, optLen := n, int(binary.BigEndian.Uint16(b))
				b = b[2:]
				scope, n = scopeLen/4, (scopeLen+optLen)/4
			}
		} else if ipfix && n == 0 {
			d.withdraw(ex, dm, id, false)
			continue
		}
		if id < 256 || n == 0 || scope > n {
			d.drops[dropMalformed]++
			return
		}
		// Each specifier takes at least 4 bytes, so a field count larger
		// than the set allows is malformed. One within the set but over
		// maxTemplateFields is read past and refused (limits). Fields are
		// read into the decoder's scratch slice (never larger than
		// maxTemplateFields): nothing is allocated unless the template is
		// new or changed.
		if n*4 > len(b) {
			d.drops[dropMalformed]++
			return
		}
		tooMany := n > maxTemplateFields
		if d.scratch == nil {
			d.scratch = make([]field, 0, maxTemplateFields)
		}
		fields := d.scratch[:0]
		for i := 0; i < n; i++ {
			if len(b) < 4 {
				d.drops[dropMalformed]++
				return
			}
			typ := binary.BigEndian.Uint16(b)
			length := binary.BigEndian.Uint16(b[2:])
			b = b[4:]
			ent := false
			if ipfix && typ&0x8000 != 0 {
				if len(b) < 4 {
					d.drops[dropMalformed]++
					return
				}
				ent, typ = true, typ&0x7FFF
				b = b[4:] // enterprise number
			}
			if length == varLen && !ipfix {
				d.drops[dropMalformed]++
				return
			}
			if tooMany {
				continue
			}
			op := fieldOp(typ, ent)
			if i < scope {
				// Scope fields say what the options apply to: a sampler,
				// or an interface (v9 scope type 2; IPFIX's
				// ingressInterface), else everything of the domain.
				op = opSkip
				if typ == 48 || typ == 302 {
					op = opSamplerID
				}
			}
			if !ent && (typ == 10 && (ipfix || i >= scope) || !ipfix && i < scope && typ == 2) {
				op = opInIf
			}
			fields = append(fields, field{op: op, length: length})
		}
		if tooMany {
			d.drops[dropLimits]++
			continue
		}
		d.define(ex, dm, id, fields, options, scope, now)
	}
}

// define stores a template (a copy of fields), refreshing it when it is
// unchanged, and decodes the data sets that waited for it. A new or
// changed template over the domain's or exporter's limits is refused
// (a changed one's old version is removed: its data is no longer
// decoded with it).
func (d *decoder) define(ex *exporter, dm *domain, id uint16, fields []field, options bool, scope int, now time.Time) {
	t := dm.templates[id]
	if t != nil && t.same(fields, options, scope) {
		t.seen = now
	} else {
		if t != nil {
			d.remove(ex, dm, id, t)
		} else if len(dm.templates) >= maxTemplates {
			d.drops[dropLimits]++
			return
		}
		if ex.fields+len(fields)+templateOverhead > maxExporterFields {
			d.drops[dropLimits]++
			return
		}
		t = newTemplate(slices.Clone(fields), options, scope, now)
		dm.templates[id] = t
		ex.fields += t.cost()
	}
	if len(dm.pending) == 0 {
		return
	}
	kept := dm.pending[:0]
	for _, p := range dm.pending {
		if p.id != id {
			kept = append(kept, p)
			continue
		}
		dm.pendingBytes -= len(p.data)
		d.data(ex, dm, id, p.data, now, false)
	}
	clear(dm.pending[len(kept):])
	dm.pending = kept
}

// remove deletes a template and gives back its cost.
func (d *decoder) remove(ex *exporter, dm *domain, id uint16, t *template) {
	delete(dm.templates, id)
	ex.fields -= t.cost()
}

// withdraw removes a template (IPFIX withdrawal; the set id withdraws
// every template of its kind).
func (d *decoder) withdraw(ex *exporter, dm *domain, id uint16, options bool) {
	if id == 2 || id == 3 {
		for k, t := range dm.templates {
			if t.options == options {
				d.remove(ex, dm, k, t)
			}
		}
		return
	}
	if t := dm.templates[id]; t != nil {
		d.remove(ex, dm, id, t)
	}
}

// expirePending drops the held data sets older than maxPendingAge,
// counted as no_template.
func (d *decoder) expirePending(dm *domain, now time.Time) {
	kept := dm.pending[:0]
	for _, p := range dm.pending {
		if now.Sub(p.at) > maxPendingAge {
			dm.pendingBytes -= len(p.data)
			d.drops[dropNoTemplate]++
			continue
		}
		kept = append(kept, p)
	}
	clear(dm.pending[len(kept):])
	dm.pending = kept
}

// expire drops an exporter's held data sets older than maxPendingAge (the
// listener calls it at the end of each window, so a set whose template
// never comes is counted even if the exporter falls silent).
func (d *decoder) expire(ex *exporter, now time.Time) {
	for _, dm := range ex.domains {
		if len(dm.pending) > 0 {
			d.expirePending(dm, now)
		}
	}
}

// data decodes one data set and returns the number of records read and
// whether its template is an options template. ok is false when the set
// could not be (wholly) decoded: no (fresh) template, or a record that
// runs past the set. hold says to keep a set without template until its
// template arrives.
func (d *decoder) data(ex *exporter, dm *domain, id uint16, b []byte, now time.Time, hold bool) (records int, options, ok bool) {
	t := dm.templates[id]
	if t != nil && d.lifetime > 0 && now.Sub(t.seen) > d.lifetime {
		d.remove(ex, dm, id, t)
		d.drops[dropExpired]++
		return 0, false, false
	}
	if t == nil {
		if hold && len(dm.pending) < maxPendingSets && dm.pendingBytes+len(b) <= maxPendingBytes {
			dm.pending = append(dm.pending, pendingSet{id: id, at: now, data: append([]byte(nil), b...)})
			dm.pendingBytes += len(b)
			return 0, false, false
		}
		d.drops[dropNoTemplate]++
		return 0, false, false
	}
	minLen := t.recLen
	if minLen < 1 {
		minLen = 1
	}
	for len(b) >= minLen {
		n := d.record(ex, dm, t, b)
		if n <= 0 {
			d.drops[dropMalformed]++
			return records, t.options, false
		}
		records++
		b = b[n:]
	}
	// What is left is padding, shorter than a record.
	return records, t.options, true
}

// record decodes one data record and returns its length, or -1 when the
// record runs past the set.
func (d *decoder) record(ex *exporter, dm *domain, t *template, b []byte) int {
	var (
		f                                     = &d.f
		src4, dst4, src6, dst6                []byte // the fields' values, nil: absent
		haveBytes, havePkts                   bool
		totBytes, totPkts                     uint64
		sampler                               uint32
		haveSampler                           bool
		inIfV                                 []byte // the input interface, nil: absent
		interval, pktInterval, pktSpace       uint64
		hasIntervalField, hasPktIntervalField bool
	)
	f.proto, f.srcPort, f.dstPort, f.bytes, f.packets = 0, 0, 0, 0, 0
	off := 0
	for i := range t.fields {
		fd := &t.fields[i]
		n := int(fd.length)
		if fd.length == varLen {
			if off >= len(b) {
				return -1
			}
			n = int(b[off])
			off++
			if n == 255 {
				if off+2 > len(b) {
					return -1
				}
				n = int(binary.BigEndian.Uint16(b[off:]))
				off += 2
			}
		}
		if off+n > len(b) {
			return -1
		}
		v := b[off : off+n]
		off += n
		switch fd.op {
		case opSkip:
		case opBytes:
			f.bytes, haveBytes = be(v), true
		case opPackets:
			f.packets, havePkts = be(v), true
		case opBytesTotal:
			totBytes = be(v)
		case opPacketsTotal:
			totPkts = be(v)
		case opProto:
			f.proto = uint8(be(v))
		case opSrcPort:
			f.srcPort = uint16(be(v))
		case opDstPort:
			f.dstPort = uint16(be(v))
		case opSrc4:
			if n == 4 {
				src4 = v
			}
		case opDst4:
			if n == 4 {
				dst4 = v
			}
		case opSrc6:
			if n == 16 {
				src6 = v
			}
		case opDst6:
			if n == 16 {
				dst6 = v
			}
		case opSamplerID:
			sampler, haveSampler = uint32(be(v)), true
		case opSamplingInterval:
			interval, hasIntervalField = be(v), true
		case opPacketInterval:
			pktInterval, hasPktIntervalField = be(v), true
		case opPacketSpace:
			pktSpace = be(v)
		case opInIf:
			if inIfV == nil { // the first one
				inIfV = v
			}
		}
	}
	if t.options {
		inIf, haveInIf := ifOf(inIfV)
		rate := uint64(0)
		switch {
		case hasIntervalField:
			rate = interval
		case hasPktIntervalField && pktInterval > 0:
			rate = (pktInterval + pktSpace) / pktInterval
		}
		if rate > 0 && rate <= 1<<24 {
			switch {
			case haveSampler:
				if dm.samplers == nil {
					dm.samplers = map[uint32]uint32{}
				}
				if len(dm.samplers) < maxTemplates {
					dm.samplers[sampler] = uint32(rate)
				}
			case haveInIf:
				if dm.ifRates == nil {
					dm.ifRates = map[uint32]uint32{}
				}
				if len(dm.ifRates) < maxTemplates {
					dm.ifRates[inIf] = uint32(rate)
				}
			default:
				dm.sampling = uint32(rate)
			}
		}
		return off
	}
	// A template may carry both families, the unused one zero: a family
	// counts only when both its addresses are set and specified, IPv4
	// first when both are.
	switch {
	case src4 != nil && dst4 != nil && binary.BigEndian.Uint32(src4) != 0 && binary.BigEndian.Uint32(dst4) != 0:
		f.src, f.dst = netip.AddrFrom4([4]byte(src4)), netip.AddrFrom4([4]byte(dst4))
	case src6 != nil && dst6 != nil:
		f.src, f.dst = netip.AddrFrom16([16]byte(src6)).Unmap(), netip.AddrFrom16([16]byte(dst6)).Unmap()
		if !usable(f.src, f.dst) {
			d.drops[dropNoAddress]++
			return off
		}
	default:
		d.drops[dropNoAddress]++
		return off
	}
	if !haveBytes {
		f.bytes = totBytes
	}
	if !havePkts {
		f.packets = totPkts
	}
	// The sampler's interval, else the input interface's, else the
	// domain's.
	rate := dm.sampling
	if dm.ifRates != nil {
		if inIf, ok := ifOf(inIfV); ok {
			if r, ok := dm.ifRates[inIf]; ok {
				rate = r
			}
		}
	}
	if haveSampler {
		if r, ok := dm.samplers[sampler]; ok {
			rate = r
		}
	}
	if rate > 1 {
		f.bytes *= uint64(rate)
		f.packets *= uint64(rate)
	}
	d.emit(ex)
	return off
}

// ifOf reads an input interface field's value (false: absent, or not
// 1 to 8 bytes).
func ifOf(v []byte) (uint32, bool) {
	if len(v) < 1 || len(v) > 8 {
		return 0, false
	}
	return uint32(be(v)), true
}

// usable reports whether a flow's addresses of one family are both present
// and specified (not 0.0.0.0 or ::), and of one family once unmapped (an
// IPv4-mapped IPv6 address is IPv4).
func usable(src, dst netip.Addr) bool {
	return src.IsValid() && dst.IsValid() && !src.IsUnspecified() && !dst.IsUnspecified() && src.Is4() == dst.Is4()
}
