package mcp

import "github.com/jocasta/jocasta/projections"

// The tools' output is validated against the schema the SDK infers from
// the Go types, where a map or a slice is an object or an array, never
// null: these give empty ones for nil.

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func orEmptyMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

func deviceOut(d projections.Device) projections.Device {
	d.Names = orEmptyMap(d.Names)
	d.Evidence = orEmptyMap(d.Evidence)
	d.Addresses = orEmpty(d.Addresses)
	d.Ports = orEmpty(d.Ports)
	d.Services = orEmpty(d.Services)
	d.Sources = orEmpty(d.Sources)
	return d
}

func statsOut(s projections.Stats) projections.Stats {
	s.ByPresence = orEmptyMap(s.ByPresence)
	s.ByGroup = orEmptyMap(s.ByGroup)
	s.ByNetwork = orEmptyMap(s.ByNetwork)
	s.BySource = orEmptyMap(s.BySource)
	if s.NewestDevice != nil {
		d := deviceOut(*s.NewestDevice)
		s.NewestDevice = &d
	}
	return s
}

func scanOut(s projections.Scan) projections.Scan {
	s.Networks = orEmpty(s.Networks)
	s.Errors = orEmpty(s.Errors)
	return s
}
