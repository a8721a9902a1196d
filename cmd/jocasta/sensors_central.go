package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/events/remote"
	"github.com/jocasta/jocasta/store"
)

// sensorsCentral is serve's side of remote sites: the consumer of the
// sensors' stream and, when sensors.nats.url is empty, the embedded NATS
// server it reads from.
type sensorsCentral struct {
	central *remote.Central
	emb     *remote.Embedded
	nc      *nats.Conn
	log     zerolog.Logger
}

// startSensors starts the embedded server (if any), connects and loads
// the central's state; nil when sensors.enabled is false.
func startSensors(ctx context.Context, cfg *config.Config, st *store.Store, m *serviceMetrics, log zerolog.Logger) (*sensorsCentral, error) {
	s := cfg.Sensors
	if !s.Enabled {
		return nil, nil
	}
	log = log.With().Str("component", "sensors").Logger()
	sc := &sensorsCentral{log: log}
	opts := remote.CentralOptions{Allowed: s.Names, Log: log}
	if m != nil {
		opts.Observe = m.sensorMessage
	}
	sc.central = remote.NewCentral(st, opts)
	if err := sc.central.Init(ctx); err != nil {
		return nil, err
	}
	if s.NATS.URL == "" {
		e := s.NATS.Embedded
		emb, err := remote.StartEmbedded(remote.EmbeddedOptions{Listen: e.Listen, User: e.User, Password: e.Password, Sensors: e.SensorPasswords(),
			TLSCert: e.TLSCert, TLSKey: e.TLSKey, StoreDir: cfg.NATSStoreDir(), Log: log})
		if err != nil {
			return nil, fmt.Errorf("sensors.nats.embedded: %w", err)
		}
		nc, err := emb.Conn("jocasta-central", log)
		if err != nil {
			emb.Shutdown()
			return nil, err
		}
		sc.emb, sc.nc = emb, nc
		log.Info().Str("listen", emb.Addr().String()).Str("store_dir", cfg.NATSStoreDir()).Msg("embedded NATS server (JetStream) listening for sensors")
	} else {
		n := s.NATS.NATSClient
		nc, err := remote.Connect(remote.ClientOptions{URL: n.URL, CredentialsFile: n.CredentialsFile, User: n.User, Password: n.Password,
			TLSCA: n.TLSCA, TLSCert: n.TLSCert, TLSKey: n.TLSKey, Insecure: n.Insecure, Name: "jocasta-central"}, log)
		if err != nil {
			return nil, fmt.Errorf("sensors.nats: %w", err)
		}
		sc.nc = nc
	}
	if m != nil {
		m.sensorContacts(sc.central)
	}
	return sc, nil
}

// addr is where the embedded server listens (nil without one).
func (s *sensorsCentral) addr() string {
	if s == nil || s.emb == nil {
		return ""
	}
	return s.emb.Addr().String()
}

// run consumes until ctx is done, then stops the embedded server.
func (s *sensorsCentral) run(ctx context.Context) error {
	err := s.central.Run(ctx, s.nc)
	if s.emb != nil {
		s.emb.Shutdown()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("sensors: %w", err)
	}
	return nil
}

// sensorContacts registers each allowed sensor's last contact (Unix
// seconds, 0 before the first) and whether it is silent.
func (m *serviceMetrics) sensorContacts(c *remote.Central) {
	for _, ct := range c.Contacts() {
		name := ct.Sensor
		find := func() remote.Contact {
			for _, x := range c.Contacts() {
				if x.Sensor == name {
					return x
				}
			}
			return remote.Contact{}
		}
		m.set.NewGauge(fmt.Sprintf("jocasta_sensor_last_contact_seconds{sensor=%s}", label(name)), func() float64 {
			if t := find().Last; !t.IsZero() {
				return float64(t.UnixNano()) / 1e9
			}
			return 0
		})
		m.set.NewGauge(fmt.Sprintf("jocasta_sensor_silent{sensor=%s}", label(name)), func() float64 {
			if find().SilentSince != nil {
				return 1
			}
			return 0
		})
	}
}

// sensorMessage counts one message by sensor and result, and the delay
// from the sensor's publish, and from the observation's end, to the commit.
func (m *serviceMetrics) sensorMessage(o remote.Outcome) {
	name := o.Sensor
	if name == "" {
		name = "(not allowed)"
	}
	sensor := label(name)
	m.set.GetOrCreateCounter(fmt.Sprintf("jocasta_sensor_messages_total{sensor=%s,result=%s}", sensor, label(o.Result))).Inc()
	if o.Result == "appended" {
		m.set.GetOrCreatePrometheusHistogram(fmt.Sprintf("jocasta_sensor_delivery_seconds{sensor=%s}", sensor)).Update(max(o.Delay, 0).Seconds())
		m.set.GetOrCreatePrometheusHistogram(fmt.Sprintf("jocasta_sensor_observation_delay_seconds{sensor=%s}", sensor)).Update(max(o.Observed, time.Duration(0)).Seconds())
	}
}
