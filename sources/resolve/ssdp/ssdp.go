package ssdp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources/internal/fanout"
	"github.com/jocasta/jocasta/sources/resolve/onlink"

	"golang.org/x/net/ipv4"

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultTimeout        = time.Second
	DefaultConcurrency    = 32
	DefaultMX             = 1
	DefaultMaxDescription = 256 << 10

	maxReplyPackets   = 4096
	maxDistinct       = 1024
	maxLocationsPerIP = 4
	maxWarnings       = 16
	maxPacket         = 8192
)

// Group is the SSDP multicast address.
var Group = netip.MustParseAddrPort("239.255.255.250:1900")

// Options configure a [Resolver]. The zero value is usable.
type Options struct {
	// Timeout bounds one description fetch: connecting, the response
	// headers and the body. Zero means DefaultTimeout (1s).
	Timeout time.Duration
	// Concurrency is the most hosts whose descriptions are fetched at
	// once. Zero means DefaultConcurrency (32).
	Concurrency int
	// MX is the M-SEARCH MX value in seconds, 1 to 5: devices answer
	// within MX seconds, and replies are collected for MX+1 s. Zero means
	// DefaultMX (1).
	MX int
	// MaxDescription caps a description's size in bytes. Zero means
	// DefaultMaxDescription (256 KiB).
	MaxDescription int64
}

// Resolver searches for UPnP devices. It is safe for concurrent use.
type Resolver struct {
	o Options
	// Test hooks: where the search goes, which interfaces exist, and how
	// long to listen.
	group  netip.AddrPort
	links  func() (onlink.Links, error)
	listen time.Duration
}

// New returns a Resolver with o's settings, defaults filled in and MX
// clamped to 1..5.
func New(o Options) *Resolver {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MX <= 0 {
		o.MX = DefaultMX
	}
	o.MX = min(o.MX, 5)
	if o.MaxDescription <= 0 {
		o.MaxDescription = DefaultMaxDescription
	}
	return &Resolver{
		o: o, group: Group, links: onlink.Local,
		listen: time.Duration(o.MX+1) * time.Second,
	}
}

// Name returns sources.NameSSDP.
func (r *Resolver) Name() string { return sources.NameSSDP }

// reply is one distinct search response.
type reply struct {
	from netip.Addr
	resp Response
}

// Enrich searches the links of hosts, fetches the descriptions of the
// hosts that answered, sets their UPnP field and names the unnamed ones
// after their friendlyName. Refused locations, oversized or broken
// descriptions and failed fetches are reported in the returned error
// (at most 16 listed, the rest counted). On cancellation it returns
// ctx.Err() with what it has.
func (r *Resolver) Enrich(ctx context.Context, hosts []*sources.Host) error {
	byIP := map[netip.Addr]*sources.Host{}
	for _, h := range hosts {
		if h != nil && h.IP.Unmap().Is4() {
			byIP[h.IP.Unmap()] = h
		}
	}
	if len(byIP) == 0 {
		return nil
	}
	ls, err := r.links()
	if err != nil {
		return err
	}
	var ifaces []net.Interface
	for ip := range byIP {
		if ifi, ok := ls.Find(ip); ok && !slices.ContainsFunc(ifaces, func(i net.Interface) bool { return i.Index == ifi.Index }) {
			ifaces = append(ifaces, ifi)
		}
	}
	if len(ifaces) == 0 {
		return fmt.Errorf("ssdp: %w", ErrNoLink)
	}

	var w warnings
	replies, err := r.search(ctx, ifaces, &w)
	if err != nil {
		w.add(err)
	}

	// Locations to fetch per host, refused ones reported.
	locs := map[netip.Addr][]*url.URL{}
	refused := map[string]bool{}
	for _, rp := range replies {
		if _, ok := byIP[rp.from]; !ok {
			continue
		}
		u, err := CheckLocation(rp.resp.Location, rp.from)
		if err != nil {
			key := rp.from.String() + " " + rp.resp.Location
			if !refused[key] {
				refused[key] = true
				w.add(fmt.Errorf("ssdp: %s advertised %.120q: %w", rp.from, rp.resp.Location, err))
			}
			continue
		}
		if len(locs[rp.from]) < maxLocationsPerIP && !slices.ContainsFunc(locs[rp.from], func(v *url.URL) bool { return v.String() == u.String() }) {
			locs[rp.from] = append(locs[rp.from], u)
		}
	}

	// Fetch, one worker per host, Concurrency at a time.
	type result struct {
		ip   netip.Addr
		desc *sources.UPnP
		errs []error
	}
	ips := make([]netip.Addr, 0, len(locs))
	for ip := range locs {
		ips = append(ips, ip)
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	results := make([]result, len(ips))
	client := r.httpClient()
	defer client.CloseIdleConnections()
	fanout.Each(ctx, len(ips), r.o.Concurrency, func(i int) {
		ip := ips[i]
		res := result{ip: ip}
		us := locs[ip]
		slices.SortFunc(us, func(a, b *url.URL) int { return strings.Compare(a.String(), b.String()) })
		for _, u := range us {
			d, err := r.fetch(ctx, client, u, ip)
			if err != nil {
				if ctx.Err() == nil {
					res.errs = append(res.errs, fmt.Errorf("ssdp: %s: %w", u.Redacted(), err))
				}
				continue
			}
			res.desc = &d
			if d.FriendlyName != "" {
				break
			}
		}
		results[i] = res
	})

	for _, res := range results {
		for _, e := range res.errs {
			w.add(e)
		}
		h := byIP[res.ip]
		if res.desc == nil || h == nil {
			continue
		}
		unnamed := !h.Named()
		h.UPnP = res.desc
		if unnamed {
			h.SetName(sources.NameSSDP, res.desc.FriendlyName)
		}
	}
	if err := sources.ContextErr(ctx); err != nil {
		w.add(fmt.Errorf("ssdp: %w", err))
	}
	return w.err()
}

// search sends the M-SEARCH out of every interface and collects distinct
// replies for the listen window.
func (r *Resolver) search(ctx context.Context, ifaces []net.Interface, w *warnings) ([]reply, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{})
	if err != nil {
		return nil, fmt.Errorf("ssdp: open socket: %w", err)
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(r.listen)); err != nil {
		return nil, fmt.Errorf("ssdp: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	pc := ipv4.NewPacketConn(conn)
	req := SearchRequest(r.o.MX)
	var sendErr error
	sent := 0
	for _, ifi := range ifaces {
		if r.group.Addr().IsMulticast() && ifi.Flags&net.FlagMulticast != 0 {
			_ = pc.SetMulticastInterface(&ifi)
			_ = pc.SetMulticastTTL(2) // UDA 1.1 §1.3.2
		}
		if _, err := conn.WriteToUDPAddrPort(req, r.group); err != nil {
			sendErr = err
			continue
		}
		sent++
	}
	if sent == 0 {
		return nil, fmt.Errorf("ssdp: send M-SEARCH: %w", sendErr)
	}

	var (
		out       []reply
		seen      = map[string]bool{}
		malformed int
		firstBad  error
	)
	buf := make([]byte, maxPacket)
	for range maxReplyPackets {
		n, src, err := conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return out, fmt.Errorf("ssdp: read: %w", err)
			}
			break
		}
		from := src.Addr().Unmap()
		resp, err := ParseResponse(buf[:n])
		if err != nil {
			malformed++
			if firstBad == nil {
				firstBad = fmt.Errorf("from %s: %w", from, err)
			}
			continue
		}
		key := from.String() + "\x00" + resp.Location
		usnKey := from.String() + "\x00usn\x00" + resp.USN
		if seen[key] || resp.USN != "" && seen[usnKey] || len(out) >= maxDistinct {
			continue
		}
		seen[key] = true
		if resp.USN != "" {
			seen[usnKey] = true
		}
		out = append(out, reply{from: from, resp: resp})
	}
	if malformed > 0 {
		w.add(fmt.Errorf("ssdp: %d malformed replies ignored, first: %w", malformed, firstBad))
	}
	return out, nil
}

// httpClient fetches descriptions: no proxy, no keep-alive, no
// compression, redirects only to the same address.
func (r *Resolver) httpClient() *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            (&net.Dialer{Timeout: r.o.Timeout}).DialContext,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ResponseHeaderTimeout:  r.o.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   r.o.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return errors.New("more than 3 redirects")
			}
			if _, err := CheckLocation(req.URL.String(), addrOf(via[0].URL)); err != nil {
				return fmt.Errorf("redirect: %w", err)
			}
			return nil
		},
	}
}

func addrOf(u *url.URL) netip.Addr {
	a, _ := netip.ParseAddr(u.Hostname())
	return a
}

// fetch GETs one description and parses it.
func (r *Resolver) fetch(ctx context.Context, client *http.Client, u *url.URL, ip netip.Addr) (sources.UPnP, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return sources.UPnP{}, err
	}
	req.Header.Set("User-Agent", "jocasta/1 UPnP/1.1")
	resp, err := client.Do(req)
	if err != nil {
		return sources.UPnP{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sources.UPnP{}, fmt.Errorf("HTTP status %s", resp.Status)
	}
	if resp.ContentLength > r.o.MaxDescription {
		return sources.UPnP{}, fmt.Errorf("%w: %d bytes declared, cap %d: not read", ErrTooLarge, resp.ContentLength, r.o.MaxDescription)
	}
	b, err := readLimited(resp.Body, r.o.MaxDescription)
	if err != nil {
		return sources.UPnP{}, err
	}
	return ParseDescription(b)
}

// readLimited reads at most max bytes of body, and one more to tell a
// body of exactly max bytes from a larger one, which is an error.
func readLimited(body io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, fmt.Errorf("read description: %w", err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than %d bytes: cut", ErrTooLarge, max)
	}
	return b, nil
}

// warnings collects errors, keeping the first few.
type warnings struct {
	list  []error
	extra int
}

func (w *warnings) add(err error) {
	if len(w.list) < maxWarnings {
		w.list = append(w.list, err)
		return
	}
	w.extra++
}

func (w *warnings) err() error {
	if w.extra > 0 {
		return errors.Join(append(w.list, fmt.Errorf("ssdp: %d more problems not listed", w.extra))...)
	}
	return errors.Join(w.list...)
}
