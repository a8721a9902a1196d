package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	flagFile := filepath.Join(dir, "flag.yaml")
	envFile := filepath.Join(dir, "env.yaml")
	local := filepath.Join(dir, "jocasta.yaml")
	system := filepath.Join(dir, "etc.yaml")
	missing := filepath.Join(dir, "missing.yaml")
	for _, f := range []string{flagFile, envFile, local, system} {
		if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		flag       string
		env        []string
		candidates []string
		want       string
		err        string
	}{
		{"flag wins", flagFile, []string{"SVC_CONFIG=" + envFile}, []string{local}, flagFile, ""},
		{"env next", "", []string{"SVC_CONFIG=" + envFile}, []string{local}, envFile, ""},
		{"local next", "", nil, []string{local, system}, local, ""},
		{"system last", "", nil, []string{missing, system}, system, ""},
		{"none", "", []string{"SVC_CONFIG="}, []string{missing}, "", ""},
		{"flag missing", missing, nil, []string{local}, "", "--config names"},
		{"env missing", "", []string{"SVC_CONFIG=" + missing}, []string{local}, "", "SVC_CONFIG names"},
		{"flag dir", dir, nil, nil, "", "is a directory"},
		{"candidate dir", "", nil, []string{dir}, "", "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := find(tt.flag, tt.env, tt.candidates)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("find = %q, %v; want error with %q", got, err, tt.err)
				}
				if strings.Contains(tt.name, "missing") && !errors.Is(err, ErrNotFound) {
					t.Errorf("error %v does not wrap ErrNotFound", err)
				}
				if strings.Count(err.Error(), "config:") != 1 {
					t.Errorf("error %q repeats itself", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("find = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestFindDefaults runs the real lookup in a directory with and without
// ./jocasta.yaml. /etc/jocasta/config.yaml is not created by the test; if the
// machine has one, the "none" case expects it.
func TestFindDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	want := ""
	if _, err := os.Stat(SystemFile); err == nil {
		want = SystemFile
	}
	if got, err := Find("", nil); err != nil || got != want {
		t.Errorf("Find with no file = %q, %v; want %q", got, err, want)
	}
	if err := os.WriteFile(LocalFile, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Find("", []string{"PATH=/bin"}); err != nil || got != LocalFile {
		t.Errorf("Find = %q, %v; want %q", got, err, LocalFile)
	}
}
