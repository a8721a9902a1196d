package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events/remote"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/builtin"
	"github.com/jocasta/jocasta/sources/scheduler"
)

// cmdSensor runs the sources of its configuration at a remote site and
// publishes what they observe to the central over NATS JetStream.
func cmdSensor(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("sensor", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("sensor", pos, 0, ""); err != nil {
		return err
	}
	cfg, path, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	var missing []error
	if cfg.Sensor.Name == "" {
		missing = append(missing, errors.New("sensor.name: required: the name the central lists in sensors.names"))
	}
	if cfg.Sensor.NATS.URL == "" {
		missing = append(missing, errors.New("sensor.nats.url: required: the central's NATS server, such as nats://central.example:4222"))
	}
	if err := errors.Join(missing...); err != nil {
		return err
	}
	log := newLogger(cfg.Logger.Level, cfg.Logger.Format, e.stderr)
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if w := configModeWarning(path); w != "" {
		log.Warn().Msg(w)
	}
	log.Info().Str("version", version).Str("sensor", cfg.Sensor.Name).Str("config", path).Str("outbox", cfg.SensorOutbox()).Msg("jocasta sensor starting")
	return runSensor(e.ctx, cfg, log)
}

// runSensor runs the sensor until ctx is done.
func runSensor(ctx context.Context, cfg *config.Config, log zerolog.Logger) error {
	known := &knownSet{}
	slogger := slogFor(log)
	host, _ := os.Hostname()
	env := sources.Env{
		Host:    host,
		Decode:  func(key string, into any) error { return decodeKey(cfg, key, into) },
		Enabled: func(key string) []string { return enabledInstances(cfg, key) },
		Known:   known.list,
		Log:     slogger,
	}
	insts, warns, err := builtin.Build(builtin.Kinds(), env)
	for _, w := range warns {
		log.Warn().Msg(w)
	}
	if err != nil {
		return err
	}
	if err := scheduler.Check(insts); err != nil {
		return err
	}
	if len(insts) == 0 {
		return errors.New("sensor: nothing to run: set networks with scan.devices enabled, or enable a plugin")
	}
	outbox := cfg.SensorOutbox()
	if err := os.MkdirAll(filepath.Dir(outbox), 0o700); err != nil {
		return fmt.Errorf("sensor: outbox directory: %w", err)
	}
	ob, err := remote.OpenOutbox(outbox)
	if err != nil {
		return err
	}
	defer ob.Close()
	if n := ob.Len(); n > 0 {
		log.Info().Int("waiting", n).Msg("observations from a previous run wait in the outbox; sending them first")
	}
	n := cfg.Sensor.NATS
	nc, err := remote.Connect(remote.ClientOptions{URL: n.URL, CredentialsFile: n.CredentialsFile, User: n.User, Password: n.Password,
		TLSCA: n.TLSCA, TLSCert: n.TLSCert, TLSKey: n.TLSKey, Insecure: n.Insecure, Name: "jocasta-sensor-" + cfg.Sensor.Name}, log)
	if err != nil {
		return err
	}
	pub, err := remote.NewPublisher(nc, log)
	if err != nil {
		nc.Close()
		return err
	}
	defer pub.Close()
	sn := &remote.Sensor{Name: cfg.Sensor.Name, Interval: sensorInterval(insts), Outbox: ob, Publisher: pub, Log: log}
	sched := &scheduler.Scheduler{Sink: knownSink{next: sn, known: known}, Log: slogger}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return sched.Run(gctx, insts) })
	g.Go(func() error { return sn.Run(gctx) })
	log.Info().Int("sources", len(insts)).Str("interval", sn.Interval.String()).Msg("sensor running")
	err = g.Wait()
	log.Info().Int("waiting", ob.Len()).Msg("sensor stopped")
	return err
}

// sensorInterval is the shortest interval of the sensor's pollers (a
// minute for listeners only, the flow window): the central calls the
// sensor silent after three of them.
func sensorInterval(insts []sources.Instance) time.Duration {
	var iv time.Duration
	for _, in := range insts {
		if in.Poller != nil && (iv == 0 || in.Interval < iv) {
			iv = in.Interval
		}
	}
	if iv < time.Second {
		iv = time.Minute
	}
	return iv
}

// knownSet is the sensor's own view of the addresses it found, for its
// port scans (the central's inventory is not at hand): the responders of
// its newest complete sweep, plus those of incomplete ones since.
type knownSet struct {
	mu    sync.Mutex
	addrs map[netip.Addr]bool
}

func (k *knownSet) list(context.Context) ([]sources.KnownAddress, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]sources.KnownAddress, 0, len(k.addrs))
	for a := range k.addrs {
		out = append(out, sources.KnownAddress{IP: a})
	}
	slices.SortFunc(out, func(a, b sources.KnownAddress) int { return a.IP.Compare(b.IP) })
	return out, nil
}

func (k *knownSet) sweep(s *sources.Sweep) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.addrs == nil || s.Complete {
		k.addrs = map[netip.Addr]bool{}
	}
	for _, h := range s.Hosts {
		if h != nil && h.IP.IsValid() {
			k.addrs[h.IP] = true
		}
	}
}

// knownSink notes each sweep's responders, then records the run.
type knownSink struct {
	next  scheduler.Sink
	known *knownSet
}

func (s knownSink) Record(ctx context.Context, run sources.Run) error {
	if sw, ok := run.Result.(*sources.Sweep); ok {
		s.known.sweep(sw)
	}
	return s.next.Record(ctx, run)
}
