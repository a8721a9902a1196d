// Package push is the push delivery channel of notifications: it
// publishes a message to a topic URL of an ntfy-compatible server. This
// build owns its configuration (Config); the sender comes with the
// notification dispatcher.
package push

// Config is a destination's push block (notify.<name>.push).
type Config struct {
	URL      string `yaml:"url" cfg:"url"` // required; http(s); only scheme and host are ever shown
	Token    string `yaml:"token" cfg:"secret"`
	Priority int    `yaml:"priority"` // 0..5; 0 leaves it to the server
}
