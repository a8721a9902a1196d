package traffic

import (
	"encoding/binary"
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
