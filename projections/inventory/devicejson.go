package inventory

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/jocasta/jocasta/projections"
)

// encodeDeviceRow encodes the stored row of d: byte for byte
// json.Marshal(d) (TestDeviceRowIsMarshal and FuzzDeviceRow keep them
// equal), written by hand because Flush encodes every device a batch
// touched and encoding/json's reflection was a tenth of a replay. A
// device holding a time json.Marshal refuses (outside years 0-9999)
// goes to json.Marshal, for its error.
// The row is appended to buf.
func encodeDeviceRow(d *device, buf []byte) ([]byte, error) {
	if !d.timesEncodable() {
		js, err := json.Marshal(d)
		return append(buf, js...), err
	}
	b := append(buf, `{"id":`...)
	b = appendJSONString(b, d.ID)
	b = append(b, `,"key":`...)
	b = appendJSONString(b, d.Key)
	if d.MAC != "" {
		b = append(b, `,"mac":`...)
		b = appendJSONString(b, d.MAC)
	}
	if len(d.Names) > 0 {
		b = append(b, `,"names":{`...)
		for n, r := range d.Names {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, r.Src)
			b = append(b, `:{"name":`...)
			b = appendJSONString(b, r.Val.Name)
			b = append(b, `,"last_confirmed":`...)
			b = appendJSONTime(b, r.Val.LastConfirmed)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if d.BestName != "" {
		b = append(b, `,"best_name":`...)
		b = appendJSONString(b, d.BestName)
	}
	for _, f := range [...]struct {
		name string
		v    *string
	}{{`,"label":`, d.Label}, {`,"group":`, d.Group}, {`,"type":`, d.Type}, {`,"notes":`, d.Notes}} {
		if f.v != nil {
			b = append(b, f.name...)
			b = appendJSONString(b, *f.v)
		}
	}
	if d.Ignored {
		b = append(b, `,"ignored":true`...)
	}
	if d.Watched {
		b = append(b, `,"watched":true`...)
	}
	b = append(b, `,"presence":`...)
	b = appendJSONString(b, d.Presence)
	if d.Overdue {
		b = append(b, `,"overdue":true`...)
	}
	b = append(b, `,"first_seen":`...)
	b = appendJSONTime(b, d.FirstSeen)
	b = append(b, `,"last_seen":`...)
	b = appendJSONTime(b, d.LastSeen)
	b = append(b, `,"addresses":`...)
	b = appendJSONArray(b, d.Addrs, appendAddrRec)
	if len(d.Ports) > 0 {
		b = append(b, `,"ports":`...)
		b = appendJSONArray(b, d.Ports, func(b []byte, p portRec) []byte {
			b = append(b, `{"port":`...)
			b = strconv.AppendUint(b, uint64(p.Port), 10)
			b = append(b, `,"first_seen":`...)
			b = appendJSONTime(b, p.FirstSeen)
			b = append(b, `,"last_seen":`...)
			b = appendJSONTime(b, p.LastSeen)
			return append(b, '}')
		})
	}
	if len(d.Services) > 0 {
		b = append(b, `,"services":`...)
		b = appendJSONArray(b, d.Services, func(b []byte, s projections.Service) []byte {
			b = append(b, `{"instance":`...)
			b = appendJSONString(b, s.Instance)
			b = append(b, `,"type":`...)
			b = appendJSONString(b, s.Type)
			b = append(b, `,"port":`...)
			b = strconv.AppendUint(b, uint64(s.Port), 10)
			return append(b, '}')
		})
	}
	if u := d.UPnP; u != nil {
		b = append(b, `,"upnp":{`...)
		sep := ""
		for _, f := range [...]struct{ name, v string }{
			{`"friendly_name":`, u.FriendlyName}, {`"manufacturer":`, u.Manufacturer}, {`"model_name":`, u.ModelName},
		} {
			if f.v != "" {
				b = append(b, sep...)
				b = append(b, f.name...)
				b = appendJSONString(b, f.v)
				sep = ","
			}
		}
		b = append(b, '}')
	}
	if len(d.Sources) > 0 {
		b = append(b, `,"sources":`...)
		b = appendJSONStrings(b, d.Sources)
	}
	if len(d.SeenBy) > 0 {
		b = append(b, `,"seen_by":{`...)
		for n, e := range d.SeenBy {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e.Src)
			b = append(b, ':')
			b = appendJSONTime(b, e.Val)
		}
		b = append(b, '}')
	}
	if a := d.Attached; a != nil {
		b = append(b, `,"attached":{"source":`...)
		b = appendJSONString(b, a.Source)
		for _, f := range [...]struct{ name, v string }{
			{`,"device_id":`, a.DeviceID}, {`,"peer":`, a.Peer}, {`,"port":`, a.Port}, {`,"ssid":`, a.SSID}, {`,"band":`, a.Band},
		} {
			if f.v != "" {
				b = append(b, f.name...)
				b = appendJSONString(b, f.v)
			}
		}
		if a.Signal != 0 {
			b = append(b, `,"signal":`...)
			b = strconv.AppendInt(b, int64(a.Signal), 10)
		}
		if a.Behind != 0 {
			b = append(b, `,"behind":`...)
			b = strconv.AppendInt(b, int64(a.Behind), 10)
		}
		b = append(b, '}')
	}
	b = append(b, `,"evidence":{`...)
	sep := ""
	for _, f := range d.Evidence.fields() {
		e := f.ev
		if e.Source == "" && e.Actor == "" && e.Time == (time.Time{}) {
			continue // omitzero
		}
		b = append(b, sep...)
		b = appendJSONString(b, f.name)
		b = append(b, `:{"source":`...)
		b = appendJSONString(b, e.Source)
		if e.Actor != "" {
			b = append(b, `,"actor":`...)
			b = appendJSONString(b, e.Actor)
		}
		b = append(b, `,"time":`...)
		b = appendJSONTime(b, e.Time)
		b = append(b, '}')
		sep = ","
	}
	return append(b, "}}"...), nil
}

// appendAddrRec appends json.Marshal(a).
func appendAddrRec(b []byte, a *addrRec) []byte {
	if a == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"ip":`...)
	b = appendJSONString(b, a.IP)
	if a.Network != "" {
		b = append(b, `,"network":`...)
		b = appendJSONString(b, a.Network)
	}
	b = append(b, `,"first_seen":`...)
	b = appendJSONTime(b, a.FirstSeen)
	b = append(b, `,"last_seen":`...)
	b = appendJSONTime(b, a.LastSeen)
	if a.RetiredAt != nil {
		b = append(b, `,"retired_at":`...)
		b = appendJSONTime(b, *a.RetiredAt)
	}
	return append(b, '}')
}

// timesEncodable reports whether every time of d is one json.Marshal
// encodes (years 0-9999, offsets under 24 hours; offsets in whole
// minutes, to stay on the common path).
func (d *device) timesEncodable() bool {
	ok := func(t time.Time) bool {
		if y := t.Year(); y < 0 || y > 9999 {
			return false
		}
		_, off := t.Zone()
		return off%60 == 0 && off > -24*3600 && off < 24*3600
	}
	if !ok(d.FirstSeen) || !ok(d.LastSeen) {
		return false
	}
	for _, n := range d.Names {
		if !ok(n.Val.LastConfirmed) {
			return false
		}
	}
	for _, a := range d.Addrs {
		if a != nil && (!ok(a.FirstSeen) || !ok(a.LastSeen) || (a.RetiredAt != nil && !ok(*a.RetiredAt))) {
			return false
		}
	}
	for _, p := range d.Ports {
		if !ok(p.FirstSeen) || !ok(p.LastSeen) {
			return false
		}
	}
	for _, f := range d.Evidence.fields() {
		if !ok(f.ev.Time) {
			return false
		}
	}
	for _, e := range d.SeenBy {
		if !ok(e.Val) {
			return false
		}
	}
	return true
}
