package dnssd

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

// Caps on what one Enrich keeps, whatever the network sends.
const (
	maxAddrsPerName = 8
	maxNames        = 1024
)

// instance is one service instance heard of.
type instance struct {
	fqdn   string // lower case, presentation format; the map key
	name   string // unescaped instance label
	typ    string // "_http._tcp"
	port   uint16
	target string // SRV target, lower case
	hasSRV bool
	from   netip.Addr // who sent the SRV (or the PTR before one came)
}

// cache merges the records of every reply of one Enrich.
type cache struct {
	maxTypes, maxInstances int
	types                  map[string]bool // "_http._tcp.local."
	instances              map[string]*instance
	addrs                  map[string][]netip.Addr
}

func newCache(maxTypes, maxInstances int) *cache {
	return &cache{
		maxTypes: maxTypes, maxInstances: maxInstances,
		types:     map[string]bool{},
		instances: map[string]*instance{},
		addrs:     map[string][]netip.Addr{},
	}
}

// add merges the records of one reply from src.
func (c *cache) add(src netip.Addr, recs []Record) {
	services := strings.ToLower(ServicesName)
	for _, r := range recs {
		switch r.Type {
		case dns.TypePTR:
			if r.Name == services {
				if _, ok := ServiceType(r.Target); ok && (c.types[r.Target] || len(c.types) < c.maxTypes) {
					c.types[r.Target] = true
				}
				continue
			}
			if _, ok := ServiceType(r.Name); !ok || !strings.HasSuffix(r.Target, "."+r.Name) {
				continue
			}
			c.instance(r.Target, r.Instance, src)
		case dns.TypeSRV:
			i := c.instance(r.Name, r.Instance, src)
			if i == nil {
				continue
			}
			i.port, i.target, i.hasSRV, i.from = r.Port, r.Target, true, src
		case dns.TypeA, dns.TypeAAAA:
			a := r.Addr
			if !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback() && !src.IsLoopback() {
				continue
			}
			list, known := c.addrs[r.Name]
			if slices.Contains(list, a) || len(list) >= maxAddrsPerName || !known && len(c.addrs) >= maxNames {
				continue
			}
			c.addrs[r.Name] = append(list, a)
		}
	}
}

// instance returns the instance with the given owner name, adding it if
// the name has the shape of an instance and the cap allows.
func (c *cache) instance(fqdn, asReceived string, src netip.Addr) *instance {
	if i, ok := c.instances[fqdn]; ok {
		return i
	}
	name, typ, ok := SplitInstance(asReceived)
	if !ok || len(c.instances) >= c.maxInstances {
		return nil
	}
	i := &instance{fqdn: fqdn, name: name, typ: typ, from: src}
	c.instances[fqdn] = i
	return i
}

// typeNames are the service types found, sorted.
func (c *cache) typeNames() []string {
	var out []string
	for t := range c.types {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// unresolved returns, sorted, the instances without an SRV record and the
// SRV targets without an address.
func (c *cache) unresolved() (noSRV, noAddr []string) {
	seen := map[string]bool{}
	for _, i := range c.sorted() {
		switch {
		case !i.hasSRV:
			noSRV = append(noSRV, i.fqdn)
		case len(c.addrs[i.target]) == 0 && i.target != "." && !seen[i.target]:
			seen[i.target] = true
			noAddr = append(noAddr, i.target)
		}
	}
	return noSRV, noAddr
}

func (c *cache) sorted() []*instance {
	out := make([]*instance, 0, len(c.instances))
	for _, i := range c.instances {
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b *instance) int { return strings.Compare(a.fqdn, b.fqdn) })
	return out
}

// services maps each address to the services found on it: by the SRV
// target's addresses, or the SRV's sender when no address was heard.
func (c *cache) services() map[netip.Addr][]sources.Service {
	out := map[netip.Addr][]sources.Service{}
	for _, i := range c.sorted() {
		if !i.hasSRV {
			continue
		}
		addrs := c.addrs[i.target]
		if len(addrs) == 0 {
			addrs = []netip.Addr{i.from}
		}
		s := sources.Service{Instance: i.name, Type: i.typ, Port: i.port}
		for _, a := range addrs {
			if !slices.Contains(out[a], s) {
				out[a] = append(out[a], s)
			}
		}
	}
	for a := range out {
		sortServices(out[a])
	}
	return out
}

// sortServices orders by instance name, then type, then port.
func sortServices(s []sources.Service) {
	slices.SortFunc(s, func(a, b sources.Service) int {
		return cmp.Or(strings.Compare(a.Instance, b.Instance), strings.Compare(a.Type, b.Type), cmp.Compare(a.Port, b.Port))
	})
}
