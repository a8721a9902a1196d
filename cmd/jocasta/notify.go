package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/jocasta/jocasta/cmd/internal/config"
)

// notificationsNotSent lists, one line each, the enabled notification
// destinations, which this build accepts in its configuration but does
// not send to yet, so that serve says so in its log instead of ignoring
// them silently. The lines name the key, never a value. (Plugin kinds
// without a source are reported by sources/builtin.)
func notificationsNotSent(cfg *config.Config) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Notify)) {
		if cfg.Notify[name].Enabled {
			out = append(out, fmt.Sprintf("notify.%s is enabled, but this build sends no notifications yet: nothing is sent to it", name))
		}
	}
	return out
}
