package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/access"
	"github.com/jocasta/jocasta/store"
	"golang.org/x/term"
)

// openAdmin reaches a running serve through its control socket, or else
// opens the database itself. close must be called.
// mode says what an open of the database itself may do: create it, change
// an existing one, or only read its log (the log commands, which then
// have no projections).
func openAdmin(e *env, cfgPath string, mode openMode) (a admin, close func() error, err error) {
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return nil, nil, err
	}
	if s, ok := dialControl(cfg.SocketPath(), dbFileAbs(cfg)); ok {
		return s, func() error { return nil }, nil
	}
	_, statErr := os.Stat(cfg.DBFile())
	c, err := openCore(e.ctx, cfg, nopLogger(), mode)
	if err != nil {
		return nil, nil, err
	}
	if mode == openCreate && errors.Is(statErr, fs.ErrNotExist) {
		// Setting up may create the database; say so, so that a mistyped
		// db.path shows at once instead of as a token serve never knows.
		fmt.Fprintf(e.stderr, "jocasta: no database at %s (db.path, db.name): created a new one\n", cfg.DBFile())
	}
	c.progress = func(format string, args ...any) { fmt.Fprintf(e.stderr, format+"\n", args...) }
	return c, c.Close, nil
}

// actor names who runs an admin command: cli:<os user>. A serve that
// carries the command out through its control socket takes the actor
// from the socket's peer credentials instead (see listenControl).
func actor() string { return uidActor(os.Getuid()) }

func withAdmin(e *env, cfgPath string, mode openMode, f func(admin) error) error {
	a, closeFn, err := openAdmin(e, cfgPath, mode)
	if err != nil {
		return err
	}
	err = f(a)
	if cerr := closeFn(); err == nil {
		err = cerr
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func cmdTokenCreate(e *env, args []string) error {
	var cfgPath, name, mode, expires string
	var asJSON bool
	fs := newFlags("token create", &cfgPath)
	fs.StringVar(&name, "name", "", "token name")
	fs.StringVar(&mode, "mode", "", "read or read_write")
	fs.StringVar(&expires, "expires", "", "never, 30d, 90d or 1y")
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("token create", pos, 0, ""); err != nil {
		return err
	}
	if name == "" {
		return usagef("token create needs --name (and may take --mode read or read_write, --expires never, 30d, 90d or 1y)")
	}
	// The safe choices unless told otherwise, said on stderr so that
	// stdout stays the token for scripts.
	if mode == "" {
		mode = events.ModeRead
		fmt.Fprintln(e.stderr, "jocasta: no --mode given: the token is read only (--mode read_write for one that may edit devices)")
	}
	if expires == "" {
		// The contract: a token never expires unless an expiry was chosen.
		expires = "never"
		fmt.Fprintln(e.stderr, "jocasta: no --expires given: the token never expires (--expires 30d, 90d or 1y for one that does)")
	}
	if mode != events.ModeRead && mode != events.ModeReadWrite {
		return usagef("--mode %q: want read or read_write", mode)
	}
	if _, err := access.ParseExpiry(expires, time.Now()); err != nil {
		return usagef("--expires %q: want never, 30d, 90d or 1y", expires)
	}
	return withAdmin(e, cfgPath, openCreate, func(a admin) error {
		resp, err := a.TokenCreate(e.ctx, tokenCreateReq{Name: name, Mode: mode, Expires: expires, Actor: actor()})
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(e.stdout, struct {
				tokenCreateResp
			}{resp})
		}
		fmt.Fprintf(e.stdout, "created token %s (%s, %s, expires %s)\n", resp.Token.ID, resp.Token.Name, resp.Token.Mode, fmtTime(resp.Token.ExpiresAt))
		fmt.Fprintln(e.stdout, "the token is shown once; store it now:")
		fmt.Fprintln(e.stdout, resp.Secret)
		return nil
	})
}

func cmdTokenList(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("token list", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("token list", pos, 0, ""); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openExisting, func(a admin) error {
		toks, err := a.TokenList(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if toks == nil {
				toks = toks[:0]
			}
			return printJSON(e.stdout, toks)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tMODE\tSTATE\tCREATED\tEXPIRES\tLAST USED")
		for _, t := range toks {
			c := t.CreatedAt
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Mode, t.State, fmtTime(&c), fmtTime(t.ExpiresAt), fmtTime(t.LastUsedAt))
		}
		return tw.Flush()
	})
}

func cmdTokenRevoke(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("token revoke", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("token revoke", pos, 1, "the token ID (see jocasta token list)"); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openExisting, func(a admin) error {
		if err := a.TokenRevoke(e.ctx, idReq{ID: pos[0], Actor: actor()}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked token %s\n", pos[0])
		return nil
	})
}

// readPassword reads a password from stdin (one line) with --password-stdin,
// or asks twice on the terminal.
func readPassword(e *env, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password from stdin: %w", err)
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	f, ok := e.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", usagef("stdin is not a terminal: pass --password-stdin and write the password to stdin")
	}
	fmt.Fprint(e.stderr, "password: ")
	p1, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", err
	}
	fmt.Fprint(e.stderr, "again: ")
	p2, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(e.stderr)
	if err != nil {
		return "", err
	}
	if string(p1) != string(p2) {
		return "", errors.New("the passwords differ")
	}
	return string(p1), nil
}

// userCmdMode lets user add create the database (the first account may
// come before serve first runs); passwd works on an existing one.
func userCmdMode(name string) openMode {
	if name == "user add" {
		return openCreate
	}
	return openExisting
}

func userCmd(e *env, args []string, name string, op func(admin, userReq) error, done string) error {
	var cfgPath string
	var stdin bool
	fs := newFlags(name, &cfgPath)
	fs.BoolVar(&stdin, "password-stdin", false, "read the password from stdin")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(name, pos, 1, "a user NAME"); err != nil {
		return err
	}
	pw, err := readPassword(e, stdin)
	if err != nil {
		return err
	}
	return withAdmin(e, cfgPath, userCmdMode(name), func(a admin) error {
		if err := op(a, userReq{Name: pos[0], Password: pw, Actor: actor()}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, done+"\n", pos[0])
		return nil
	})
}

func cmdUserAdd(e *env, args []string) error {
	return userCmd(e, args, "user add", func(a admin, r userReq) error { return a.UserAdd(e.ctx, r) }, "added user %s")
}

func cmdUserPasswd(e *env, args []string) error {
	return userCmd(e, args, "user passwd", func(a admin, r userReq) error { return a.UserPasswd(e.ctx, r) }, "changed the password of %s")
}

func cmdUserList(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("user list", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("user list", pos, 0, ""); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openExisting, func(a admin) error {
		us, err := a.UserList(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if us == nil {
				us = []userInfo{}
			}
			return printJSON(e.stdout, us)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCREATED")
		for _, u := range us {
			fmt.Fprintf(tw, "%s\t%s\n", u.Name, fmtTime(&u.CreatedAt))
		}
		return tw.Flush()
	})
}

func cmdUserRemove(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("user remove", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("user remove", pos, 1, "a user NAME"); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openExisting, func(a admin) error {
		if err := a.UserRemove(e.ctx, userReq{Name: pos[0], Actor: actor()}); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "removed user %s\n", pos[0])
		return nil
	})
}

func cmdLogVerify(e *env, args []string) error {
	var cfgPath string
	var asJSON bool
	fs := newFlags("log verify", &cfgPath)
	fs.BoolVar(&asJSON, "json", false, "JSON output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("log verify", pos, 0, ""); err != nil {
		return err
	}
	return withAdmin(e, cfgPath, openReadOnly, func(a admin) error {
		rep, err := a.LogVerify(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if err := printJSON(e.stdout, verifyJSON(rep)); err != nil {
				return err
			}
		} else if rep.OK {
			fmt.Fprintf(e.stdout, "ok: %d events checked (seq %d to %d), hash chain intact\n", rep.Checked, rep.First, rep.Head)
		}
		if !rep.OK {
			return fmt.Errorf("log verify: first bad event at seq %d: %s", rep.FirstBad, rep.Reason)
		}
		return nil
	})
}

// verifyOutput is log verify --json: snake_case, as every JSON jocasta
// writes; first_bad and reason are null while the chain is intact.
type verifyOutput struct {
	OK       bool    `json:"ok"`
	First    uint64  `json:"first"`
	Head     uint64  `json:"head"`
	Checked  uint64  `json:"checked"`
	FirstBad *uint64 `json:"first_bad"`
	Reason   *string `json:"reason"`
}

func verifyJSON(r store.VerifyReport) verifyOutput {
	out := verifyOutput{OK: r.OK, First: r.First, Head: r.Head, Checked: r.Checked}
	if !r.OK {
		bad, reason := r.FirstBad, r.Reason
		out.FirstBad, out.Reason = &bad, &reason
	}
	return out
}

func cmdLogTail(e *env, args []string) error {
	var cfgPath, from string
	var includeSecrets bool
	fs := newFlags("log tail", &cfgPath)
	fs.StringVar(&from, "from", "", "first seq to print (default: new events only)")
	fs.BoolVar(&includeSecrets, "include-secrets", false, "keep token and password hashes (redacted by default)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("log tail", pos, 0, ""); err != nil {
		return err
	}
	var seq uint64
	if from != "" {
		if seq, err = strconv.ParseUint(from, 10, 64); err != nil || seq == 0 {
			return usagef("--from %q: want a seq ≥ 1", from)
		}
	}
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	return followLog(e.ctx, cfg, seq, includeSecrets, e.stdout)
}

func cmdLogExport(e *env, args []string) error {
	var cfgPath, since, until string
	var includeSecrets bool
	fs := newFlags("log export", &cfgPath)
	fs.StringVar(&since, "since", "", "first time (RFC 3339)")
	fs.BoolVar(&includeSecrets, "include-secrets", false, "keep token and password hashes, for a backup (redacted by default)")
	fs.StringVar(&until, "until", "", "last time (RFC 3339)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("log export", pos, 0, ""); err != nil {
		return err
	}
	s, err := parseTime("since", since)
	if err != nil {
		return err
	}
	u, err := parseTime("until", until)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(e.stdout)
	err = withAdmin(e, cfgPath, openReadOnly, func(a admin) error {
		return a.LogExport(e.ctx, exportReq{Since: s, Until: u, IncludeSecrets: includeSecrets}, w)
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

func cmdReplay(e *env, args []string) error {
	var cfgPath, until, output string
	fs := newFlags("replay", &cfgPath)
	fs.StringVar(&until, "until", "", "replay events up to this time (RFC 3339)")
	fs.StringVar(&output, "output", "", "the fresh database file to write (default: beside the database, named after it and the time)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("replay", pos, 0, ""); err != nil {
		return err
	}
	u, err := parseTime("until", until)
	if err != nil {
		return err
	}
	if output == "" {
		cfg, _, err := loadConfig(e, cfgPath)
		if err != nil {
			return err
		}
		output = defaultReplayOutput(dbFileAbs(cfg), time.Now())
	}
	// A running serve writes the file: give it a path that does not depend
	// on its working directory.
	if output, err = filepath.Abs(output); err != nil {
		return err
	}
	// Offline, this process does the replay; over the control socket the
	// daemon does and this setting only affects the client.
	tuneReplayGC()
	return withAdmin(e, cfgPath, openExisting, func(a admin) error {
		resp, err := a.Replay(e.ctx, replayReq{Until: u, Output: output})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "replayed %s into %s\n", plural(resp.Events, "event"), resp.Output)
		return nil
	})
}

// defaultReplayOutput is where replay writes without --output: beside
// the database, its name with ".replay-" and the time (UTC, to the
// second) before the extension: /data/jocasta.db replayed at 10:00:00 on
// 27 November 2026 gives /data/jocasta.replay-20261127T100000Z.db.
func defaultReplayOutput(db string, now time.Time) string {
	ext := filepath.Ext(db)
	return strings.TrimSuffix(db, ext) + ".replay-" + now.UTC().Format("20060102T150405Z") + ext
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatUint(n, 10) + " " + noun + "s"
}
