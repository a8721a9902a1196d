package access

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	bolt "go.etcd.io/bbolt"
)

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 1, 31, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		choice  string
		want    time.Duration // 0 with never
		never   bool
		wantErr bool
	}{
		{choice: "never", never: true},
		{choice: "30d", want: 720 * time.Hour},
		{choice: "90d", want: 2160 * time.Hour},
		{choice: "1y", want: 8760 * time.Hour},
		{choice: "", wantErr: true},
		{choice: "30", wantErr: true},
		{choice: "1d", wantErr: true},
		{choice: "365d", wantErr: true},
		{choice: "1Y", wantErr: true},
		{choice: "Never", wantErr: true},
		{choice: " 30d", wantErr: true},
		{choice: "720h", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.choice, func(t *testing.T) {
			got, err := ParseExpiry(tt.choice, now)
			if tt.wantErr {
				if !errors.Is(err, ErrBadExpiry) {
					t.Fatalf("ParseExpiry(%q) = %v, %v; want ErrBadExpiry", tt.choice, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseExpiry(%q): %v", tt.choice, err)
			}
			if tt.never {
				if got != nil {
					t.Fatalf("ParseExpiry(never) = %v, want nil", got)
				}
				return
			}
			if got == nil || !got.Equal(now.Add(tt.want)) || got.Location() != time.UTC {
				t.Fatalf("ParseExpiry(%q) = %v, want %v in UTC", tt.choice, got, now.Add(tt.want).UTC())
			}
		})
	}
}

func TestTokenExpiry(t *testing.T) {
	tests := []struct {
		name      string
		expiry    string
		after     time.Duration // clock = creation + after
		wantValid bool
		wantState string
	}{
		{"never, a century later", "never", 100 * 8760 * time.Hour, true, StateActive},
		{"30d at creation", "30d", 0, true, StateActive},
		{"30d just before", "30d", 720*time.Hour - time.Nanosecond, true, StateActive},
		{"30d at expiry", "30d", 720 * time.Hour, false, StateExpired},
		{"30d after", "30d", 721 * time.Hour, false, StateExpired},
		{"90d day 89", "90d", 89 * 24 * time.Hour, true, StateActive},
		{"90d day 90", "90d", 90 * 24 * time.Hour, false, StateExpired},
		{"1y day 364", "1y", 364 * 24 * time.Hour, true, StateActive},
		{"1y day 365", "1y", 365 * 24 * time.Hour, false, StateExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openDB(t)
			clk := newClock(t0)
			p := New(clk.Now)
			var l logger
			ev, id, secret := l.created(t, "ci", events.ModeRead, tt.expiry, t0)
			apply(t, db, p, ev)
			clk.Set(t0.Add(tt.after))

			pr, err := p.Authenticate(context.Background(), secret)
			if tt.wantValid {
				if err != nil {
					t.Fatalf("Authenticate: %v, want success", err)
				}
				want := projections.Principal{TokenID: id, Name: "ci", Mode: events.ModeRead}
				if pr != want {
					t.Errorf("principal = %+v, want %+v", pr, want)
				}
			} else if err != projections.ErrInvalidToken {
				t.Fatalf("Authenticate = %+v, %v; want projections.ErrInvalidToken", pr, err)
			}
			// Expired tokens stay listed, with state "expired".
			list := p.Tokens(clk.Now())
			if len(list) != 1 || list[0].ID != id || list[0].State != tt.wantState {
				t.Fatalf("Tokens = %+v, want %s with state %s", list, id, tt.wantState)
			}
			if got, err := p.Token(id); err != nil || got.State != tt.wantState {
				t.Errorf("Token(%s) = %+v, %v; want state %s", id, got, err, tt.wantState)
			}
			if !list[0].CreatedAt.Equal(t0) {
				t.Errorf("created_at = %v, want the event time %v", list[0].CreatedAt, t0)
			}
			if tt.expiry == "never" {
				if list[0].ExpiresAt != nil {
					t.Errorf("expires_at = %v, want nil", list[0].ExpiresAt)
				}
			} else if list[0].ExpiresAt == nil {
				t.Errorf("expires_at = nil, want a time")
			}
			if !p.TokenNameTaken("ci") {
				t.Errorf("TokenNameTaken(ci) = false for a listed token")
			}
		})
	}
}

func TestRevokedToken(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	evA, idA, secretA := l.created(t, "a", events.ModeReadWrite, "never", t0)
	evB, idB, secretB := l.created(t, "b", events.ModeRead, "30d", t0.Add(time.Minute))
	apply(t, db, p, evA, evB)
	if _, err := p.Authenticate(context.Background(), secretA); err != nil {
		t.Fatalf("Authenticate a before revoke: %v", err)
	}
	apply(t, db, p, l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: idA}, t0.Add(time.Hour)))

	if pr, err := p.Authenticate(context.Background(), secretA); err != projections.ErrInvalidToken {
		t.Fatalf("Authenticate revoked = %+v, %v; want ErrInvalidToken", pr, err)
	}
	if _, err := p.Authenticate(context.Background(), secretB); err != nil {
		t.Fatalf("Authenticate b: %v", err)
	}
	list := p.Tokens(clk.Now())
	if len(list) != 1 || list[0].ID != idB {
		t.Fatalf("Tokens after revoke = %+v, want only %s", list, idB)
	}
	if _, err := p.Token(idA); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("Token(revoked) error = %v, want ErrNotFound", err)
	}
	if p.TokenNameTaken("a") {
		t.Errorf("the name of a revoked token is still taken")
	}
	if !p.TokenNameTaken("b") || p.TokenNameTaken("B") {
		t.Errorf("TokenNameTaken: want exact match on b only")
	}
	// A second revoke, a revoke of an unknown id and a duplicate create
	// change nothing.
	apply(t, db, p,
		l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: idA}, t0.Add(2*time.Hour)),
		l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: "tok_unknown"}, t0.Add(2*time.Hour)),
		l.ev(t, events.KindTokenCreated, events.TokenCreated{TokenID: idB, Name: "evil", Mode: events.ModeReadWrite, SecretSHA256: SecretSHA256(secretA)}, t0.Add(2*time.Hour)),
	)
	if list := p.Tokens(clk.Now()); len(list) != 1 || list[0].Name != "b" || list[0].Mode != events.ModeRead {
		t.Fatalf("Tokens after no-op events = %+v", list)
	}
	if _, err := p.Authenticate(context.Background(), secretA); err != projections.ErrInvalidToken {
		t.Fatalf("a duplicate token.created revived a revoked secret: %v", err)
	}
}

func TestAuthenticateRefusals(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	ev, _, secret := l.created(t, "good", events.ModeRead, "never", t0)
	// A token whose stored mode is not a mode never authenticates.
	badSecret, badSum := NewTokenSecret()
	bad := l.ev(t, events.KindTokenCreated, events.TokenCreated{TokenID: TokenID(), Name: "bad", Mode: "admin", SecretSHA256: badSum}, t0)
	// A token whose stored hash is not a SHA-256 is listed but unusable.
	junk := l.ev(t, events.KindTokenCreated, events.TokenCreated{TokenID: TokenID(), Name: "junk", Mode: events.ModeRead, SecretSHA256: "zz"}, t0)
	apply(t, db, p, ev, bad, junk)
	if _, err := p.Authenticate(context.Background(), secret); err != nil {
		t.Fatalf("Authenticate(good): %v", err)
	}
	unknown, _ := NewTokenSecret()
	tests := []struct{ name, secret string }{
		{"empty", ""},
		{"prefix only", "jct_"},
		{"unknown", unknown},
		{"wrong last character", secret[:len(secret)-1] + flip(secret[len(secret)-1])},
		{"upper-case prefix", "JCT_" + secret[4:]},
		{"other prefix", "jcx_" + secret[4:]},
		{"no prefix", secret[4:]},
		{"one character short", secret[:len(secret)-1]},
		{"one character long", secret + "0"},
		{"trailing newline", secret + "\n"},
		{"leading space", " " + secret[:len(secret)-1]},
		{"bearer prefix", "Bearer " + secret},
		{"non-base62 character", secret[:10] + "-" + secret[11:]},
		{"non-ASCII", secret[:len(secret)-2] + "é"},
		{"hex hash of the secret", SecretSHA256(secret)},
		{"huge", "jct_" + strings.Repeat("a", 1<<20)},
		{"unknown mode", badSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, err := p.Authenticate(context.Background(), tt.secret)
			if err != projections.ErrInvalidToken {
				t.Fatalf("Authenticate = %+v, %v; want exactly projections.ErrInvalidToken", pr, err)
			}
			if pr != (projections.Principal{}) {
				t.Errorf("refusal returned principal %+v", pr)
			}
		})
	}
	if n := len(p.Tokens(clk.Now())); n != 3 {
		t.Errorf("Tokens lists %d, want 3 (the unusable ones are still listed)", n)
	}
}

func flip(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func TestTokensSorted(t *testing.T) {
	db, _ := openDB(t)
	p := New(newClock(t0).Now)
	var l logger
	e3, id3, _ := l.created(t, "third", events.ModeRead, "never", t0.Add(3*time.Hour))
	e1, id1, _ := l.created(t, "first", events.ModeRead, "never", t0.Add(1*time.Hour))
	e2, id2, _ := l.created(t, "second", events.ModeRead, "never", t0.Add(2*time.Hour))
	apply(t, db, p, e3, e1, e2)
	list := p.Tokens(t0)
	var got []string
	for _, tk := range list {
		got = append(got, tk.ID)
	}
	want := []string{id1, id2, id3}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("order = %v, want %v (by created_at)", got, want)
	}
}

func TestSecretFormat(t *testing.T) {
	re := regexp.MustCompile(`^jct_[0-9a-zA-Z]{43}$`)
	seen := map[string]bool{}
	for range 5000 {
		s, sum := NewTokenSecret()
		if !re.MatchString(s) || len(s) != SecretLen || SecretLen != 47 {
			t.Fatalf("secret %q does not match %v (len %d)", s, re, len(s))
		}
		if sum != SecretSHA256(s) || len(sum) != 64 {
			t.Fatalf("hash %q is not the hex SHA-256 of the secret", sum)
		}
		if seen[s] {
			t.Fatalf("secret repeated after %d", len(seen))
		}
		seen[s] = true
		if !wellFormedSecret(s) {
			t.Fatalf("wellFormedSecret rejects a fresh secret")
		}
	}
	idRe := regexp.MustCompile(`^tok_[0-9a-zA-Z]{10}$`)
	ids := map[string]bool{}
	for range 5000 {
		id := TokenID()
		if !idRe.MatchString(id) {
			t.Fatalf("token id %q does not match %v", id, idRe)
		}
		if ids[id] {
			t.Fatalf("token id repeated")
		}
		ids[id] = true
	}
}

func TestEncodeSecret(t *testing.T) {
	var zero, one, max [32]byte
	one[31] = 1
	for i := range max {
		max[i] = 0xff
	}
	tests := []struct {
		name string
		in   [32]byte
		want string
	}{
		{"zero is all padding", zero, "jct_" + strings.Repeat("0", 43)},
		{"one", one, "jct_" + strings.Repeat("0", 42) + "1"},
		// 2^256-1 in base62 needs all 43 digits.
		{"max", max, "jct_" + encodeMaxExpected()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeSecret(tt.in)
			if got != tt.want || len(got) != SecretLen {
				t.Errorf("encodeSecret = %q, want %q", got, tt.want)
			}
		})
	}
}

// encodeMaxExpected computes 2^256-1 in base62 by long division, as an
// independent check of big.Int.Text's digit order and alphabet.
func encodeMaxExpected() string {
	n := make([]byte, 32)
	for i := range n {
		n[i] = 0xff
	}
	var digits []byte
	for {
		allZero := true
		var rem int
		for i := range n {
			cur := rem*256 + int(n[i])
			n[i] = byte(cur / 62)
			rem = cur % 62
			if n[i] != 0 {
				allZero = false
			}
		}
		digits = append(digits, base62Digits[rem])
		if allZero {
			break
		}
	}
	for i, j := 0, len(digits)-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	return string(digits)
}

func TestValidateTokenName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"ci", true},
		{"Grafana dashboard", true},
		{"ünïcode ✓", true},
		{strings.Repeat("x", 64), true},
		{strings.Repeat("é", 64), true},
		{strings.Repeat("x", 65), false},
		{"", false},
		{"   ", false},
		{"tab\there", false},
		{"new\nline", false},
		{"bad\xffutf8", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ValidateTokenName(tt.name); (err == nil) != tt.ok {
				t.Errorf("ValidateTokenName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
	for _, m := range []string{events.ModeRead, events.ModeReadWrite} {
		if err := ValidateMode(m); err != nil {
			t.Errorf("ValidateMode(%q): %v", m, err)
		}
	}
	for _, m := range []string{"", "write", "READ", "admin"} {
		if err := ValidateMode(m); !errors.Is(err, ErrBadMode) {
			t.Errorf("ValidateMode(%q) = %v, want ErrBadMode", m, err)
		}
	}
}

func TestLastUsedFlushAndReload(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	evA, idA, secretA := l.created(t, "a", events.ModeRead, "never", t0)
	evB, idB, secretB := l.created(t, "b", events.ModeRead, "never", t0)
	evC, idC, _ := l.created(t, "c", events.ModeRead, "never", t0)
	apply(t, db, p, evA, evB, evC)

	used := t0.Add(90 * time.Minute)
	clk.Set(used)
	for _, s := range []string{secretA, secretB} {
		if _, err := p.Authenticate(context.Background(), s); err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	}
	lastUsed := func(p *Projection) map[string]*time.Time {
		out := map[string]*time.Time{}
		for _, tk := range p.Tokens(clk.Now()) {
			out[tk.ID] = tk.LastUsedAt
		}
		return out
	}
	if got := lastUsed(p); got[idA] == nil || !got[idA].Equal(used) || got[idC] != nil {
		t.Fatalf("in memory: last used = %v", got)
	}
	// Not flushed yet: a reload knows nothing.
	if got := lastUsed(loadFresh(t, db, clk.Now)); got[idA] != nil || got[idB] != nil {
		t.Fatalf("before flush, reload has last used %v", got)
	}
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatalf("FlushLastUsed: %v", err)
	}
	got := lastUsed(loadFresh(t, db, clk.Now))
	if got[idA] == nil || !got[idA].Equal(used) || got[idB] == nil || !got[idB].Equal(used) || got[idC] != nil {
		t.Fatalf("after flush, reload has last used %v; want a and b at %v", got, used)
	}
	// Nothing dirty: a flush writes nothing.
	stats := db.Stats()
	before := stats.TxStats.GetWrite()
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatalf("FlushLastUsed (idle): %v", err)
	}
	stats = db.Stats()
	if after := stats.TxStats.GetWrite(); after != before {
		t.Errorf("an idle flush wrote %d pages", after-before)
	}
	// A revoked token's last use is not loaded again.
	apply(t, db, p, l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: idA}, used))
	got = lastUsed(loadFresh(t, db, clk.Now))
	if _, listed := got[idA]; listed {
		t.Errorf("revoked token listed after reload")
	}
	// The last-use bucket is not the projection's: replays ignore it.
	for _, b := range p.Buckets() {
		if b == BucketLastUsed {
			t.Errorf("Buckets() contains %s", BucketLastUsed)
		}
	}
}

func TestFlushFailureKeepsPending(t *testing.T) {
	db, path := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	ev, id, secret := l.created(t, "a", events.ModeRead, "never", t0)
	apply(t, db, p, ev)
	if _, err := p.Authenticate(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	ro, err := bolt.Open(path+".ro", 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	ro, err = bolt.Open(path+".ro", 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := p.FlushLastUsed(ro); err == nil {
		t.Fatal("FlushLastUsed into a read-only database succeeded")
	}
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatalf("FlushLastUsed retry: %v", err)
	}
	got, err := loadFresh(t, db, clk.Now).Token(id)
	if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0) {
		t.Fatalf("after retry: %+v, %v; want last used %v", got, err, t0)
	}
}

func TestRunFlusher(t *testing.T) {
	t.Run("final flush on cancel", func(t *testing.T) {
		db, _ := openDB(t)
		clk := newClock(t0)
		p := New(clk.Now)
		var l logger
		ev, id, secret := l.created(t, "a", events.ModeRead, "never", t0)
		apply(t, db, p, ev)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.RunFlusher(ctx, db, time.Hour) }()
		if _, err := p.Authenticate(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunFlusher: %v", err)
		}
		if got, _ := loadFresh(t, db, clk.Now).Token(id); got.LastUsedAt == nil {
			t.Fatalf("last use not flushed on cancel")
		}
	})
	t.Run("periodic", func(t *testing.T) {
		db, _ := openDB(t)
		clk := newClock(t0)
		p := New(clk.Now)
		var l logger
		ev, id, secret := l.created(t, "a", events.ModeRead, "never", t0)
		apply(t, db, p, ev)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.RunFlusher(ctx, db, time.Millisecond) }()
		defer func() { cancel(); <-done }()
		if _, err := p.Authenticate(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if got, _ := loadFresh(t, db, clk.Now).Token(id); got.LastUsedAt != nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the flusher did not write last use within 10s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("bad interval", func(t *testing.T) {
		db, _ := openDB(t)
		if err := New(nil).RunFlusher(context.Background(), db, 0); err == nil {
			t.Fatal("RunFlusher accepted a zero interval")
		}
	})
}

func BenchmarkAuthenticate(b *testing.B) {
	db, _ := openDB(b)
	p := New(func() time.Time { return t0 })
	var l logger
	var evs []events.Envelope
	var secret string
	for i := range 1000 {
		ev, _, s := l.created(b, "t"+strings.Repeat("x", i%5), events.ModeRead, "1y", t0)
		evs = append(evs, ev)
		secret = s
	}
	apply(b, db, p, evs...)
	ctx := context.Background()
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Authenticate(ctx, secret); err != nil {
				b.Fatal(err)
			}
		}
	})
	unknown, _ := NewTokenSecret()
	b.Run("unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Authenticate(ctx, unknown); err == nil {
				b.Fatal("unknown secret accepted")
			}
		}
	})
	b.Run("valid-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.Authenticate(ctx, secret); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// TestConcurrentUse authenticates, lists and flushes while events are
// applied; run with -race.
func TestConcurrentUse(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	ev, _, secret := l.created(t, "steady", events.ModeRead, "never", t0)
	apply(t, db, p, ev)
	var evs []events.Envelope
	for i := range 50 {
		e, id, _ := l.created(t, "t"+TokenID(), events.ModeRead, "30d", t0.Add(time.Duration(i)*time.Second))
		evs = append(evs, e, l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: id}, t0.Add(time.Hour)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 4)
	for range 3 {
		go func() {
			for ctx.Err() == nil {
				if _, err := p.Authenticate(ctx, secret); err != nil {
					done <- err
					return
				}
				_ = p.Tokens(clk.Now())
				_ = p.TokenNameTaken("steady")
			}
			done <- nil
		}()
	}
	go func() { done <- p.RunFlusher(ctx, db, time.Millisecond) }()
	for _, e := range evs {
		apply(t, db, p, e)
	}
	cancel()
	for range 4 {
		if err := <-done; err != nil {
			t.Errorf("concurrent use: %v", err)
		}
	}
	if list := p.Tokens(clk.Now()); len(list) != 1 || list[0].Name != "steady" || list[0].LastUsedAt == nil {
		t.Errorf("Tokens after the run = %+v", list)
	}
}
