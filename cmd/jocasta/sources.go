package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/jocasta/jocasta/cmd/internal/config"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/builtin"
)

// sourceEnv is what the source kinds get from the service: their
// settings by key, this host's name, the inventory's known addresses and
// a logger.
func sourceEnv(cfg *config.Config, inv *inventory.Inventory, log *slog.Logger) sources.Env {
	host, _ := os.Hostname()
	return sources.Env{
		Host:    host,
		Decode:  func(key string, into any) error { return decodeKey(cfg, key, into) },
		Enabled: func(key string) []string { return enabledInstances(cfg, key) },
		Known:   func(ctx context.Context) ([]sources.KnownAddress, error) { return knownAddresses(ctx, inv) },
		Log:     log,
	}
}

// valueAt finds the configuration value at a dotted key by the yaml tags
// of the Config struct.
func valueAt(cfg *config.Config, key string) (reflect.Value, error) {
	v := reflect.ValueOf(cfg).Elem()
	for _, part := range strings.Split(key, ".") {
		switch v.Kind() {
		case reflect.Struct:
			t := v.Type()
			found := false
			for i := range t.NumField() {
				if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == part {
					v, found = v.Field(i), true
					break
				}
			}
			if !found {
				return reflect.Value{}, fmt.Errorf("config: no key %s", key)
			}
		case reflect.Map:
			mv := v.MapIndex(reflect.ValueOf(part))
			if !mv.IsValid() {
				return reflect.Value{}, fmt.Errorf("config: no key %s", key)
			}
			v = mv
		default:
			return reflect.Value{}, fmt.Errorf("config: no key %s", key)
		}
	}
	return v, nil
}

// decodeKey decodes the configuration value at key into into through its
// YAML form, so that a source's own settings type (yaml tags, durations
// as time.Duration) reads what the loader validated.
func decodeKey(cfg *config.Config, key string, into any) error {
	v, err := valueAt(cfg, key)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(v.Interface())
	if err != nil {
		return fmt.Errorf("config: encode %s: %w", key, err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("config: decode %s into %T: %w", key, into, err)
	}
	return nil
}

// enabledInstances lists the instances under key with enabled: true.
func enabledInstances(cfg *config.Config, key string) []string {
	v, err := valueAt(cfg, key)
	if err != nil || v.Kind() != reflect.Map {
		return nil
	}
	var out []string
	for _, k := range v.MapKeys() {
		f := v.MapIndex(k).FieldByName("Enabled")
		if f.IsValid() && f.Kind() == reflect.Bool && f.Bool() {
			out = append(out, k.String())
		}
	}
	slices.Sort(out)
	return out
}

// knownAddresses lists every current (not retired) address of every
// device, with the ports the device advertises over DNS-SD.
func knownAddresses(ctx context.Context, inv *inventory.Inventory) ([]sources.KnownAddress, error) {
	var out []sources.KnownAddress
	f := projections.DeviceFilter{Limit: 1000, Sort: "ip"}
	for {
		page, err := inv.ListDevices(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, d := range page.Items {
			var extra []uint16
			for _, s := range d.Services {
				if s.Port != 0 {
					extra = append(extra, s.Port)
				}
			}
			for _, a := range d.Addresses {
				if a.RetiredAt != nil {
					continue
				}
				ip, err := netip.ParseAddr(a.IP)
				if err != nil {
					continue
				}
				out = append(out, sources.KnownAddress{IP: ip, Ports: extra})
			}
		}
		if page.NextCursor == nil {
			return out, nil
		}
		f.Cursor = *page.NextCursor
	}
}

// cmdListSources prints the source kinds of the registration list
// (sources/builtin): name, poller or listener, whether this build runs
// it, and what it reads.
func cmdListSources(e *env, args []string) error {
	// --config is accepted as by every command, and not needed: the kinds
	// are this build's, whatever the configuration.
	var cfgPath string
	fs := newFlags("list-sources", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("list-sources", pos, 0, ""); err != nil {
		return err
	}
	for _, k := range builtin.Kinds() {
		shape, state := "poller", "runs"
		if k.Listener {
			shape = "listener"
		}
		if k.Build == nil {
			state = "not yet in this build"
		}
		fmt.Fprintf(e.stdout, "%-13s %-9s %-22s %s\n", k.Name, shape, state, k.Doc)
	}
	return nil
}
