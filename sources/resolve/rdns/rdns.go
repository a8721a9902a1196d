package rdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources/internal/fanout"

	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

// Defaults for [Options].
const (
	DefaultTimeout     = time.Second
	DefaultConcurrency = 32
	DefaultResolvConf  = "/etc/resolv.conf"
)

// Options configure a [Resolver]. The zero value is usable.
type Options struct {
	// Timeout bounds one query to one server. Zero means DefaultTimeout
	// (1s). A host costs at most Timeout times the number of servers (twice
	// that for a truncated answer retried over TCP).
	Timeout time.Duration
	// Concurrency is the most hosts looked up at once. Zero means
	// DefaultConcurrency (32).
	Concurrency int
	// Servers are the resolvers to ask, in order, as "ip" or "ip:port"
	// (port 53 when omitted). Empty: the nameserver lines of ResolvConf.
	Servers []string
	// ResolvConf is read for servers when Servers is empty. Empty means
	// DefaultResolvConf.
	ResolvConf string
}

// Resolver looks up PTR records. It is safe for concurrent use.
type Resolver struct {
	o Options
}

// New returns a Resolver with o's settings, defaults filled in.
func New(o Options) *Resolver {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.ResolvConf == "" {
		o.ResolvConf = DefaultResolvConf
	}
	o.Servers = append([]string(nil), o.Servers...)
	return &Resolver{o: o}
}

// Name returns sources.NameDNS.
func (r *Resolver) Name() string { return sources.NameDNS }

// servers returns the configured servers as host:port, or those of the
// resolv.conf file.
func (r *Resolver) servers() ([]string, error) {
	var out []string
	if len(r.o.Servers) > 0 {
		for _, s := range r.o.Servers {
			if _, _, err := net.SplitHostPort(s); err != nil {
				s = net.JoinHostPort(strings.Trim(s, "[]"), "53")
			}
			out = append(out, s)
		}
		return out, nil
	}
	cc, err := dns.ClientConfigFromFile(r.o.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("rdns: read %s: %w", r.o.ResolvConf, err)
	}
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("rdns: %s: %w", r.o.ResolvConf, ErrNoServers)
	}
	return out, nil
}

// Enrich looks up every host's PTR record and records the name as
// Names["dns"]. Failed lookups are summarised in one error wrapping
// ErrLookupsFailed; names found are kept. On cancellation it returns
// ctx.Err() with what it has.
func (r *Resolver) Enrich(ctx context.Context, hosts []*sources.Host) error {
	servers, err := r.servers()
	if err != nil {
		return err
	}
	type result struct {
		name string
		err  error
	}
	results := make([]result, len(hosts))
	fanout.Each(ctx, len(hosts), r.o.Concurrency, func(i int) {
		h := hosts[i]
		if h == nil || !h.IP.IsValid() {
			return
		}
		name, err := r.lookup(ctx, servers, h.IP)
		results[i] = result{name, err}
	})
	ctxErr := sources.ContextErr(ctx)

	var (
		failed int
		first  error
		kinds  = map[string]int{}
	)
	for i, h := range hosts {
		res := results[i]
		if res.err == nil {
			if h != nil {
				h.SetName(sources.NameDNS, res.name)
			}
			continue
		}
		if ctxErr != nil {
			continue // cancelled, not a resolver failure
		}
		failed++
		kinds[failureKind(res.err)]++
		if first == nil {
			first = res.err
		}
	}
	if failed > 0 {
		var parts []string
		for k, n := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(parts)
		err = fmt.Errorf("rdns: %d of %d: %w (%s), first: %w",
			failed, len(hosts), ErrLookupsFailed, strings.Join(parts, ", "), first)
	}
	if ctxErr != nil {
		err = errors.Join(err, fmt.Errorf("rdns: %w", ctxErr))
	}
	return err
}

// Lookup returns the PTR name of ip ("" when there is none) from the
// configured servers.
func (r *Resolver) Lookup(ctx context.Context, ip netip.Addr) (string, error) {
	servers, err := r.servers()
	if err != nil {
		return "", err
	}
	return r.lookup(ctx, servers, ip)
}

// rcodeError is a DNS answer with a failure code.
type rcodeError struct{ rcode int }

func (e rcodeError) Error() string {
	if s, ok := dns.RcodeToString[e.rcode]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", e.rcode)
}

func failureKind(err error) string {
	var re rcodeError
	if errors.As(err, &re) {
		return re.Error()
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return "other errors"
}

func (r *Resolver) lookup(ctx context.Context, servers []string, ip netip.Addr) (string, error) {
	qname, err := dns.ReverseAddr(ip.Unmap().String())
	if err != nil {
		return "", fmt.Errorf("rdns: lookup %s: %w", ip, err)
	}
	m := new(dns.Msg)
	m.SetQuestion(qname, dns.TypePTR)
	var errs []error
	for _, srv := range servers {
		resp, err := r.exchange(ctx, m, srv, "udp")
		if err == nil && resp.Truncated && PTRName(resp, qname) == "" {
			resp, err = r.exchange(ctx, m, srv, "tcp")
		}
		if err == nil {
			switch resp.Rcode {
			case dns.RcodeSuccess:
				return PTRName(resp, qname), nil
			case dns.RcodeNameError:
				return "", nil
			default:
				err = rcodeError{resp.Rcode}
			}
		}
		errs = append(errs, fmt.Errorf("via %s: %w", srv, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("rdns: lookup %s: %w", ip, errors.Join(errs...))
}

func (r *Resolver) exchange(ctx context.Context, m *dns.Msg, srv, network string) (*dns.Msg, error) {
	qctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	c := &dns.Client{Net: network, Timeout: r.o.Timeout}
	resp, _, err := c.ExchangeContext(qctx, m, srv)
	if err != nil {
		return nil, err
	}
	if resp.Id != m.Id {
		return nil, fmt.Errorf("answer id %d, want %d", resp.Id, m.Id)
	}
	return resp, nil
}
