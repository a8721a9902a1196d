package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// cmdHealth asks the configured server's /api/livez whether serve is up:
// exit 0 when it answers 200, 1 otherwise. The container's HEALTHCHECK
// runs it (the image has no curl).
func cmdHealth(e *env, args []string) error {
	var cfgPath, url string
	fs := newFlags("health", &cfgPath)
	fs.StringVar(&url, "url", "", "the livez URL (default: server.host and server.port of the config, on loopback when 0.0.0.0)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs("health", pos, 0, ""); err != nil {
		return err
	}
	if url == "" {
		cfg, _, err := loadConfig(e, cfgPath)
		if err != nil {
			return err
		}
		host := cfg.Server.Host
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
		}
		url = "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.Server.Port)) + "/api/livez"
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usagef("--url %q: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return userErrorf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return userErrorf("%s answered %s", url, resp.Status)
	}
	fmt.Fprintf(e.stdout, "ok: %s %s\n", url, body)
	return nil
}
