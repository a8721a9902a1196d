package remote

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

func testEvent(t *testing.T, scan string) events.Envelope {
	t.Helper()
	e, err := events.New(events.KindScanFailed, events.ScanFailed{ScanID: scan, Kind: "sweep", Reason: "r"}, time.Unix(1700000000, 0))
	if err != nil {
		t.Fatal(err)
	}
	e.Source, e.Stream = "sweep:s", "scan/"+scan
	return e
}

func TestOutboxOrderAndDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.db")
	ob, err := OpenOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("outbox file mode: %v %v", fi.Mode(), err)
	}
	var ids []string
	for i := range 5 {
		e := testEvent(t, string(rune('a'+i)))
		ids = append(ids, e.ID)
		if _, err := ob.Put("sweep", e); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ob.Wake():
	default:
		t.Fatal("Put did not wake the sender")
	}
	got, err := ob.Peek(3)
	if err != nil || len(got) != 3 {
		t.Fatalf("peek: %v %d", err, len(got))
	}
	for i, e := range got {
		if e.Event.ID != ids[i] || e.Kind != "sweep" {
			t.Fatalf("entry %d: %+v, want id %s", i, e, ids[i])
		}
	}
	if err := ob.Remove(got[0].Key, got[1].Key); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ob.Put("sweep", testEvent(t, "x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}

	// Reopened, it holds what was not removed, in order, and new entries
	// go after them.
	ob, err = OpenOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	last := testEvent(t, "f")
	if _, err := ob.Put("portscan", last); err != nil {
		t.Fatal(err)
	}
	got, err = ob.Peek(100)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]string{}, ids[2:]...), last.ID)
	if len(got) != len(want) || ob.Len() != len(want) {
		t.Fatalf("after reopen: %d entries (Len %d), want %d", len(got), ob.Len(), len(want))
	}
	for i := range want {
		if got[i].Event.ID != want[i] {
			t.Errorf("entry %d: %s, want %s", i, got[i].Event.ID, want[i])
		}
		if i > 0 && got[i].Key <= got[i-1].Key {
			t.Errorf("keys not increasing: %d then %d", got[i-1].Key, got[i].Key)
		}
	}
	if string(got[0].Event.Payload) == "" || !got[0].Event.Time.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("event not kept whole: %+v", got[0].Event)
	}
}
