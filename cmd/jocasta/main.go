// Command jocasta is the network device inventory: `jocasta serve` runs the
// service; the other commands administer it, whether or not serve runs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	_ "github.com/jocasta/jocasta/cmd/jocasta/internal/noheapprofile" // first: see its doc
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as DECISIONS.md gives them.
const (
	exitOK    = 0
	exitUser  = 1
	exitUsage = 2
)

// usageError is a mistake in the command line itself (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// env is what a command may use from its process.
type env struct {
	ctx     context.Context
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
}

const usageText = `usage: jocasta <command> [flags]

commands:
  serve [--config FILE]                  run the service
  sensor [--config FILE]                 run the sources at a remote site; send them to the central over NATS
  init [--output FILE] [--force]         write a commented starter config
  config check | config show             validate / print the effective config (secrets redacted)
  token create --name N [--mode read|read_write] [--expires never|30d|90d|1y] [--json]
  token list [--json] | token revoke ID
  user add NAME [--password-stdin] | user passwd NAME [--password-stdin]
  user list [--json] | user remove NAME
  log verify [--json] | log tail [--from SEQ] [--include-secrets]
  log export [--since T] [--until T] [--include-secrets]
  log stats [--json]                     events and bytes per kind and day, snapshots, buckets
  notify list [--json] | notify test NAME
  notify set NAME KINDS@SCOPE... | notify set NAME --none   (SCOPE: all, watched, group=NAME, network=CIDR)
  notify ledger NAME [--state S] [--limit N] [--cursor C] [--json] | notify redeliver NAME ID|--all NAME
  replay [--until T] [--output FILE]     rebuild every projection into a fresh database
  whatif --online-window D --address-grace D [--since T] [--until T] [--json]   the history replayed under other rules
  backup --output FILE [--force]         a verified copy of the database, also while serve runs
  health [--url URL]                     exit 0 when serve answers /api/livez (container health checks)
  restore FILE [--force]                 put a verified backup in place of the database (serve stopped)
  list-sources                           the source kinds this build has
  version

Every command takes --config FILE (else $SVC_CONFIG, ./jocasta.yaml, /etc/jocasta/config.yaml).
Admin commands talk to a running serve through <db.path>/jocasta.sock, or open the database themselves.
`

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, environ: environ, stdin: stdin, stdout: stdout, stderr: stderr}
	err := dispatch(e, args)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		fmt.Fprint(stdout, commandUsage(args))
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "jocasta: %s\n\n%s", ue.msg, commandUsage(args))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "jocasta: %s\n", err)
		return exitUser
	}
}

var errHelp = errors.New("help")

// commandUsage is the usage of the command args name: its lines of
// usageText and a pointer to the rest, or the whole text for no command,
// an unknown one or help itself.
func commandUsage(args []string) string {
	if len(args) == 0 {
		return usageText
	}
	var lines []string
	for _, l := range strings.Split(usageText, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(l, "  ") && (t == args[0] || strings.HasPrefix(t, args[0]+" ")) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return usageText
	}
	return "usage:\n" + strings.Join(lines, "\n") +
		"\n\nEvery command takes --config FILE; `jocasta help` lists every command.\n"
}

func dispatch(e *env, args []string) error {
	if len(args) == 0 {
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(e, rest)
	case "sensor":
		return cmdSensor(e, rest)
	case "init":
		return cmdInit(e, rest)
	case "config":
		return sub(e, "config", rest, map[string]func(*env, []string) error{"check": cmdConfigCheck, "show": cmdConfigShow})
	case "token":
		return sub(e, "token", rest, map[string]func(*env, []string) error{"create": cmdTokenCreate, "list": cmdTokenList, "revoke": cmdTokenRevoke})
	case "user":
		return sub(e, "user", rest, map[string]func(*env, []string) error{"add": cmdUserAdd, "passwd": cmdUserPasswd, "list": cmdUserList, "remove": cmdUserRemove})
	case "log":
		return sub(e, "log", rest, map[string]func(*env, []string) error{"verify": cmdLogVerify, "tail": cmdLogTail, "export": cmdLogExport, "stats": cmdLogStats})
	case "notify":
		return cmdNotify(e, rest)
	case "replay":
		return cmdReplay(e, rest)
	case "whatif":
		return cmdWhatif(e, rest)
	case "health":
		return cmdHealth(e, rest)
	case "backup":
		return cmdBackup(e, rest)
	case "restore":
		return cmdRestore(e, rest)
	case "list-sources":
		return cmdListSources(e, rest)
	case "version", "--version", "-version":
		fmt.Fprintf(e.stdout, "jocasta %s\n", version)
		return nil
	case "help", "-h", "--help", "-help":
		return errHelp
	default:
		return usagef("unknown command %q", cmd)
	}
}

func sub(e *env, name string, args []string, cmds map[string]func(*env, []string) error) error {
	if len(args) == 0 {
		return usagef("%s needs a subcommand", name)
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		return errHelp // the usage of the group's commands
	}
	f, ok := cmds[args[0]]
	if !ok {
		return usagef("unknown command %q %q", name, args[0])
	}
	return f(e, args[1:])
}
