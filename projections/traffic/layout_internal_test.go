package traffic

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
)

type noAddresses struct{}

func (noAddresses) HoldingsVersion() uint64                            { return 0 }
func (noAddresses) Holdings() []inventory.Holding                      { return nil }
func (noAddresses) DeviceHoldings(string) ([]inventory.Holding, error) { return nil, nil }

// TestMinuteLayout: a row is stored once per hour, in the minute it first
// appeared; later windows add to it there, and new rows go to their
// window's minute.
func TestMinuteLayout(t *testing.T) {
	p, db := chunkDB(t)
	hour := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	old := events.TrafficRow{Src: "10.0.0.5", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 100, Packets: 1, Flows: 1}
	fresh := events.TrafficRow{Src: "10.0.0.5", Dst: "9.9.9.9", Proto: 17, Port: 53, Bytes: 7, Packets: 1, Flows: 1}
	for i, rows := range [][]events.TrafficRow{{old}, {old}, {old, fresh}} {
		end := hour.Add(time.Duration(i+1)*time.Minute + 30*time.Second)
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{Started: end.Add(-time.Minute), Finished: end, Rows: rows}, end)
		e.Seq, e.Source = uint64(i+1), "flowlistener:gw"
		if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	type row struct {
		minute byte
		peer   string
		out    bool
		bytes  uint64
	}
	var got []row
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bHours).ForEach(func(k, v []byte) error {
			if len(k) != keyLen || int64(binary.BigEndian.Uint64(k)) != hour.Unix() {
				t.Fatalf("key %x", k)
			}
			vv, err := decodeVal(v)
			if err != nil {
				return err
			}
			got = append(got, row{k[offMinute], getAddr(k[offPeer:offDir]).String(), k[offDir] == 0, vv.bytes})
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	want := map[row]bool{
		{1, "1.1.1.1", true, 300}: true, {1, "10.0.0.5", false, 300}: true, // both sides of the old row, in minute 1
		{3, "9.9.9.9", true, 7}: true, {3, "10.0.0.5", false, 7}: true, // the new row, in minute 3
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v", got)
	}
	for _, r := range got {
		if !want[r] {
			t.Fatalf("row %+v not expected; rows %+v", r, got)
		}
	}
}

// TestHourPagesPacked: a window's new rows append to the hour (its own
// minute), so the hours' leaf pages are written nearly full
// (hoursFillPercent), not split at half as bbolt does by default.
func TestHourPagesPacked(t *testing.T) {
	p, db := chunkDB(t)
	hour := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for w := range 3 {
		var rows []events.TrafficRow
		for d := range 100 {
			for k := range 100 {
				peer := w*100 + k
				rows = append(rows, events.TrafficRow{
					Src: fmt.Sprintf("10.0.%d.%d", d/250, d%250+1), Dst: fmt.Sprintf("203.0.%d.%d", peer/250, peer%250+1),
					Proto: 6, Port: 443, Bytes: 1000, Packets: 2, Flows: 1,
				})
			}
		}
		end := hour.Add(time.Duration(w+1)*time.Minute + 30*time.Second)
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{Started: end.Add(-time.Minute), Finished: end, Rows: rows}, end)
		e.Seq, e.Source = uint64(w+1), "flowlistener:gw"
		if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.View(func(tx *bolt.Tx) error {
		s := tx.Bucket(bHours).Stats()
		// Each device keeps its first TopPeers peers of the hour (the
		// rest fold into a row per country), each peer all 100 devices.
		if want := 100*(TopPeers+1) + 300*100; s.KeyN != want {
			t.Errorf("%d rows, want %d", s.KeyN, want)
		}
		if fill := float64(s.LeafInuse) / float64(s.LeafAlloc); fill < 0.8 {
			t.Errorf("leaf pages %.0f %% full (%d of %d bytes), want at least 80 %%", 100*fill, s.LeafInuse, s.LeafAlloc)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
