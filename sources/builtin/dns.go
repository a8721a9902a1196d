package builtin

import (
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/dnsfilter1"
	"github.com/jocasta/jocasta/sources/dnsfilter2"
	"github.com/jocasta/jocasta/sources/dnsnode"
)

// dnsOptions are a query-log reader's options: its source name, the
// cursor the log holds for it, and the back-fill bound retention.dns.
func dnsOptions(env sources.Env, kind, name string) (sources.DNSReaderOptions, error) {
	var keep time.Duration
	if err := env.Decode("retention.dns", &keep); err != nil {
		return sources.DNSReaderOptions{}, err
	}
	source := kind + ":" + name
	return sources.DNSReaderOptions{Source: source, Cursor: env.Cursor, Backfill: keep, Log: env.Log.With("source", source)}, nil
}

// buildDNS builds one instance per enabled key of a query-log kind. Each
// waits for the read models before its first read, so that the cursor it
// asks for is the last one the log holds.
func buildDNS(env sources.Env, kind string, build func(name string, opts sources.DNSReaderOptions) (sources.Poller, time.Duration, error)) ([]sources.Instance, []string, error) {
	insts, warns, err := buildPlugins(env, kind, "plugins."+kind, func(name string) (sources.Poller, time.Duration, error) {
		opts, err := dnsOptions(env, kind, name)
		if err != nil {
			return nil, 0, err
		}
		return build(name, opts)
	})
	for k := range insts {
		insts[k].WaitReady = true
	}
	return insts, warns, err
}

func buildDNSNode(env sources.Env) ([]sources.Instance, []string, error) {
	return buildDNS(env, "dnsnode", func(name string, opts sources.DNSReaderOptions) (sources.Poller, time.Duration, error) {
		var c dnsnode.Config
		c.SetDefaults()
		if err := env.Decode("plugins.dnsnode."+name, &c); err != nil {
			return nil, 0, err
		}
		r, err := dnsnode.New(c, opts)
		return r, c.Timeout, err
	})
}

func buildDNSFilter1(env sources.Env) ([]sources.Instance, []string, error) {
	return buildDNS(env, "dnsfilter1", func(name string, opts sources.DNSReaderOptions) (sources.Poller, time.Duration, error) {
		var c dnsfilter1.Config
		c.SetDefaults()
		if err := env.Decode("plugins.dnsfilter1."+name, &c); err != nil {
			return nil, 0, err
		}
		r, err := dnsfilter1.New(c, opts)
		return r, c.Timeout, err
	})
}

func buildDNSFilter2(env sources.Env) ([]sources.Instance, []string, error) {
	return buildDNS(env, "dnsfilter2", func(name string, opts sources.DNSReaderOptions) (sources.Poller, time.Duration, error) {
		var c dnsfilter2.Config
		c.SetDefaults()
		if err := env.Decode("plugins.dnsfilter2."+name, &c); err != nil {
			return nil, 0, err
		}
		r, err := dnsfilter2.New(c, opts)
		return r, c.Timeout, err
	})
}
