package builtin

import (
	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/flowlistener"
)

// buildFlows builds one listener per enabled plugins.flowlistener
// instance, named "flowlistener:<instance>".
func buildFlows(env sources.Env) ([]sources.Instance, []string, error) {
	var out []sources.Instance
	for _, name := range env.Enabled("plugins.flowlistener") {
		cfg := flowlistener.Config{}
		cfg.SetDefaults()
		if err := env.Decode("plugins.flowlistener."+name, &cfg); err != nil {
			return nil, nil, err
		}
		source := "flowlistener:" + name
		l, err := flowlistener.New(name, cfg, flowlistener.Options{Log: env.Log.With("source", source)})
		if err != nil {
			return nil, nil, err
		}
		out = append(out, sources.Instance{Source: source, Kind: "flowlistener", Listener: l})
	}
	return out, nil, nil
}
