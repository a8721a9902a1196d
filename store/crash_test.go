package store_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

// crashTokens is the bucket the crash child's AppendFunc writes next to
// its token.created events: token id → envelope id.
const crashTokens = "crash_tokens"

// crashChild appends from several goroutines until it is killed, printing
// "seq id" for every append that returned success, one write per line.
func crashChild(path string) {
	s, err := store.Open(path, store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	// The kill's delay counts from here, not from the process start,
	// which a loaded machine (a race build, a CI run) makes slow.
	fmt.Fprintln(os.Stderr, "ready")
	var mu sync.Mutex
	ack := func(evs []events.Envelope) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range evs {
			os.Stdout.WriteString(strconv.FormatUint(e.Seq, 10) + " " + e.ID + "\n")
		}
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				var (
					evs []events.Envelope
					err error
				)
				switch (g + i) % 3 {
				case 0:
					evs, err = s.Append(ctx, sweepEvent(nopTB{}, 5, time.Now()))
				case 1:
					evs, err = s.Append(ctx, sweepEvent(nopTB{}, 1, time.Now()), tokenEvent(nopTB{}, "batch"), sweepEvent(nopTB{}, 3, time.Now()))
				default:
					evs, err = s.AppendFunc(ctx, createToken)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "crash child: append:", err)
					os.Exit(2)
				}
				ack(evs)
			}
		})
	}
	wg.Wait()
}

// createToken is a decide function: it reads how many tokens exist and
// records the new one in crashTokens, atomically with its event.
func createToken(tx *bolt.Tx) ([]events.Envelope, error) {
	b, err := tx.CreateBucketIfNotExists([]byte(crashTokens))
	if err != nil {
		return nil, err
	}
	e := tokenEvent(nopTB{}, fmt.Sprintf("token-%d", b.Stats().KeyN))
	var p events.TokenCreated
	if err := events.DecodeInto(e, &p); err != nil {
		return nil, err
	}
	if err := b.Put([]byte(p.TokenID), []byte(e.ID)); err != nil {
		return nil, err
	}
	return []events.Envelope{e}, nil
}

// nopTB lets the child use the test helpers; they only call Fatal on a
// programming error.
type nopTB struct{ testing.TB }

func (nopTB) Helper()                  {}
func (nopTB) Fatal(args ...any)        { panic(fmt.Sprint(args...)) }
func (nopTB) Context() context.Context { return context.Background() }

// TestCrashKill kills a child that appends concurrently with SIGKILL at
// random moments; after every kill the log must open, verify, and hold
// every append the child saw succeed, with token rows and token events
// committed together. JOCASTA_CRASH_KILLS raises the number of kills.
func TestCrashKill(t *testing.T) {
	kills := 20
	if v := os.Getenv("JOCASTA_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("JOCASTA_CRASH_KILLS=%q: want a positive number", v)
		}
		kills = n
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d, %d kills", seed, kills)

	path := filepath.Join(t.TempDir(), "crash.db")
	acked := map[uint64]string{} // seq → id the child was told
	for i := range kills {
		delay := time.Duration(5+rng.IntN(76)) * time.Millisecond
		out := runAndKill(t, path, delay)
		n := 0
		for seq, id := range parseAcks(t, out) {
			if prev, ok := acked[seq]; ok && prev != id {
				t.Fatalf("kill %d: seq %d acknowledged as %s, earlier as %s: an acknowledged event was lost", i, seq, id, prev)
			}
			acked[seq] = id
			n++
		}
		checkAfterCrash(t, path, acked)
		t.Logf("kill %d after %v: %d new acks, %d in total", i, delay, n, len(acked))
	}
	if len(acked) == 0 {
		t.Fatal("the child never acknowledged an append: the kills tested nothing")
	}
}

// runAndKill starts the crash child, kills it after delay and returns
// what it printed.
func runAndKill(t *testing.T, path string, delay time.Duration) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JOCASTA_CRASH_CHILD="+path)
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			if !once && sc.Text() == "ready" {
				once = true
				close(ready)
				continue
			}
			stderr.WriteString(sc.Text() + "\n")
		}
	}()
	select {
	case <-ready:
	case <-copied:
		cmd.Wait()
		t.Fatalf("the crash child stopped before it opened the store: %s", stderr.Bytes())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the crash child did not open the store within 60s")
	}
	timer := time.NewTimer(delay)
	<-timer.C
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-copied
	err = cmd.Wait()
	if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() {
		t.Fatalf("child ended by itself (%v): %s", err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// parseAcks reads "seq id" lines; the last line may be cut short by the
// kill and is ignored unless it ends in a newline.
func parseAcks(t *testing.T, out []byte) map[uint64]string {
	t.Helper()
	acks := map[uint64]string{}
	complete := out[:bytes.LastIndexByte(out, '\n')+1]
	sc := bufio.NewScanner(bytes.NewReader(complete))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			t.Fatalf("child printed %q", sc.Text())
		}
		seq, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || len(f[1]) != 32 {
			t.Fatalf("child printed %q", sc.Text())
		}
		if prev, dup := acks[seq]; dup {
			t.Fatalf("seq %d acknowledged twice (%s, %s)", seq, prev, f[1])
		}
		acks[seq] = f[1]
	}
	return acks
}

// checkAfterCrash reopens the log and checks it.
func checkAfterCrash(t *testing.T, path string, acked map[uint64]string) {
	t.Helper()
	s, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	rep, err := s.Verify(t.Context(), nil)
	if err != nil || !rep.OK {
		t.Fatalf("verify after kill: %+v, %v", rep, err)
	}
	// Token rows written by decide and token events are all or nothing.
	rows := map[string]string{}
	err = s.DB().View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		if b := tx.Bucket([]byte(crashTokens)); b != nil {
			return b.ForEach(func(k, v []byte) error { rows[string(k)] = string(v); return nil })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fromDecide := 0
	ids := make(map[uint64]string, s.Head())
	err = s.Scan(t.Context(), 1, func(e events.Envelope) error {
		ids[e.Seq] = e.ID
		if e.Kind != events.KindTokenCreated {
			return nil
		}
		var p events.TokenCreated
		if err := events.DecodeInto(e, &p); err != nil {
			return err
		}
		if p.Name == "batch" {
			return nil
		}
		fromDecide++
		if rows[p.TokenID] != e.ID {
			return fmt.Errorf("token event seq %d has no matching row", e.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fromDecide != len(rows) {
		t.Fatalf("%d token rows but %d token events from decide", len(rows), fromDecide)
	}
	for seq, id := range acked {
		if ids[seq] != id {
			t.Fatalf("acknowledged seq %d (%s) holds %q after the kill", seq, id, ids[seq])
		}
	}
}
