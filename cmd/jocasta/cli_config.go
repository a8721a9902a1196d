package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// loadConfig finds and loads the configuration as every command does.
func loadConfig(e *env, flagPath string) (*config.Config, string, error) {
	path, err := config.Find(flagPath, e.environ)
	if err != nil {
		return nil, "", err
	}
	cfg, err := config.Load(path, e.environ)
	if err != nil {
		return nil, path, err
	}
	return cfg, path, nil
}

func cmdConfigCheck(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("config check", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("config check", pos, 0, ""); err != nil {
		return err
	}
	cfg, path, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	where := path
	if where == "" {
		where = "no configuration file (defaults and SVC_ variables)"
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", where)
	return nil
}

func cmdConfigShow(e *env, args []string) error {
	var cfgPath string
	fs := newFlags("config show", &cfgPath)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("config show", pos, 0, ""); err != nil {
		return err
	}
	cfg, _, err := loadConfig(e, cfgPath)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	// Show the effective source name rather than the empty default.
	host, _ := os.Hostname()
	cfg.Scan.Source = cfg.ScanSource(host)
	b, err := cfg.Redacted().YAML()
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(b)
	return err
}

func cmdInit(e *env, args []string) error {
	var cfgPath, output string
	var force bool
	fl := newFlags("init", &cfgPath)
	fl.StringVar(&output, "output", "jocasta.yaml", "file to write")
	fl.BoolVar(&force, "force", false, "overwrite an existing file")
	pos, err := parse(fl, args)
	if err != nil {
		return err
	}
	if err := wantArgs("init", pos, 0, ""); err != nil {
		return err
	}
	prefixes, err := config.LocalIPv4Prefixes()
	if err != nil {
		return fmt.Errorf("init: list this host's networks: %w", err)
	}
	host, _ := os.Hostname()
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(output, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("init: %s already exists; remove it or pass --force to overwrite it", output)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("init: the directory of --output %s does not exist; create it first or choose another path", output)
	}
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// An existing file kept its mode through O_TRUNC: the config may hold
	// passwords, so it is the owner's alone.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("init: chmod %s: %w", output, err)
	}
	if _, err := f.Write(config.Starter(prefixes, host)); err != nil {
		f.Close()
		return fmt.Errorf("init: write %s: %w", output, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("init: write %s: %w", output, err)
	}
	fmt.Fprintf(e.stdout, "wrote %s (networks: %v)\n", output, prefixes)
	return nil
}

// configModeWarning says, in one line, that the config file at path can
// be read by other users than its owner (it may hold passwords and
// tokens), or "" when it cannot or there is no file.
func configModeWarning(path string) string {
	if path == "" {
		return ""
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("the config file %s has mode %04o: other users can read it, and the passwords and tokens it may hold; run chmod 600 %s", path, info.Mode().Perm(), path)
}
