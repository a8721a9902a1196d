package config

import (
	"bytes"
	"fmt"
	"github.com/jocasta/jocasta/sources"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// YAML renders the configuration for `config show`, with every secret
// redacted (it renders c.Redacted(): there is no way to print secrets).
// Every key is present, durations are written as "15m", and instances and
// headers are sorted by name.
func (c *Config) YAML() ([]byte, error) {
	e := &emitter{}
	r := c.Redacted()
	e.top(schema(), reflect.ValueOf(r).Elem(), reflect.Value{})
	return e.b.Bytes(), nil
}

// Starter renders the file `jocasta init` writes: every key with a comment
// giving its meaning, default and allowed values; networks set to prefixes;
// plugin and notify examples commented out. hostname, if not empty, is named
// in the header and in the scan.source comment.
func Starter(prefixes []netip.Prefix, hostname string) []byte {
	return starter(prefixes, hostname, false)
}

// starter renders the starter file; with live examples the plugin and
// notify examples are not commented out (for tests).
func starter(prefixes []netip.Prefix, hostname string, liveExamples bool) []byte {
	c := Defaults()
	c.Networks = slices.Clone(prefixes)
	// People at a terminal read text logs; the service's default stays
	// json, for log collectors.
	c.Logger.Format = "text"
	ex := exampleConfig()
	e := &emitter{comments: true, docs: keyDocs(), hostname: hostname, liveExamples: liveExamples}
	e.header(hostname)
	e.top(schema(), reflect.ValueOf(&c).Elem(), reflect.ValueOf(&ex).Elem())
	return e.b.Bytes()
}

// exampleConfig holds the commented examples of the starter file: one
// instance of every plugin kind and one destination of every block. The
// examples that carry a password or token use ssl, as a user should: an
// uncommented example loads without a warning.
func exampleConfig() Config {
	return Config{
		Plugins: Plugins{
			RouterAPI: map[string]RouterAPI{"core": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "192.168.1.1", Port: 443, SSL: true, Timeout: time.Duration(defaultTimeout)},
				User: "jocasta", Password: "change-me"}},
			RPCRouter: map[string]RPCRouter{"ap": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "192.168.1.2", Port: 443, SSL: true, Timeout: time.Duration(defaultTimeout)},
				User: "jocasta", Password: "change-me"}},
			FlowListener: map[string]FlowListener{"core": {Enabled: true, Listen: ":2055",
				Exporters: []netip.Addr{netip.MustParseAddr("192.168.1.1")}}},
			DNSNode: map[string]DNSNode{"dns1": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "192.168.1.3", Port: 53443, SSL: true, Timeout: time.Duration(defaultTimeout)},
				Token: "change-me"}},
			DNSFilter1: map[string]DNSFilter1{"filter": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "192.168.1.4", Port: 443, SSL: true, Timeout: time.Duration(defaultTimeout)},
				Password: "change-me"}},
			DNSFilter2: map[string]DNSFilter2{"filter": {Enabled: true, EndpointConfig: sources.EndpointConfig{Host: "192.168.1.5", Port: 443, SSL: true, Timeout: time.Duration(defaultTimeout)},
				User: "jocasta", Password: "change-me"}},
		},
		Notify: map[string]Notify{
			"phone": {Enabled: true, Timeout: defaultTimeout,
				Push: &Push{URL: "https://ntfy.example.com/jocasta-alerts"}},
			"hook": {Enabled: true, Timeout: defaultTimeout,
				Webhook: &Webhook{URL: "https://hooks.example.com/jocasta", Secret: "change-me-to-a-long-random-string"}},
			"chat": {Enabled: true, Timeout: defaultTimeout,
				HTTP: &HTTP{URL: "https://chat.example.com/hooks/TOKEN",
					Headers: map[string]string{"Content-Type": "application/json"},
					Body:    "{\"text\": {{json .Summary}}, \"kind\": {{json .Kind}}}\n"}},
		},
	}
}

// emitter writes YAML, optionally with the starter's comments.
type emitter struct {
	b            bytes.Buffer
	comments     bool
	docs         map[string]keyDoc
	hostname     string
	liveExamples bool
	prefix       string // "# " while writing a commented-out block
}

const commentWidth = 80

func (e *emitter) header(hostname string) {
	on := ""
	if hostname != "" {
		on = " on " + hostname
	}
	fmt.Fprintf(&e.b, "# jocasta configuration, written by `jocasta init`%s.\n", on)
	for _, line := range []string{
		"#",
		"# Every key is listed with a comment giving its meaning, default and allowed",
		"# values. Values are the defaults, except networks, which `jocasta init` fills",
		"# with the IPv4 networks of the host it runs on, logger.format, set to text",
		"# for people reading logs at a terminal (the default, json, suits log",
		"# collectors), and the plugin and notify examples, which are commented out",
		"# and show sample values. Check the file with `jocasta config check`; see the",
		"# effective settings, secrets redacted, with `jocasta config show`.",
		"#",
		"# Where jocasta looks: --config FILE, else $SVC_CONFIG, else ./jocasta.yaml,",
		"# else /etc/jocasta/config.yaml; with none, the defaults apply.",
		"#",
		"# Every key can also be set with an environment variable, which wins over",
		"# this file: SVC_ and the key path in capitals, with a double underscore",
		"# between levels; a single underscore stays part of a key. A plugin instance",
		"# or notify destination name is one level. Lists are comma-separated.",
		"#   scan.devices.resolve_mdns        SVC_SCAN__DEVICES__RESOLVE_MDNS=false",
		"#   plugins.routerapi.core.password  SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD=...",
		"#   networks                         SVC_NETWORKS=10.0.0.0/24,10.0.1.0/24",
		"#",
		"# Durations are a whole number and one unit, s, m or h: 90s, 15m, 720h",
		"# (30 days is 720h).",
		"",
	} {
		e.b.WriteString(line)
		e.b.WriteByte('\n')
	}
}

// top writes the top-level keys. ex, when valid, supplies the plugin and
// notify examples of the starter.
func (e *emitter) top(root *field, v, ex reflect.Value) {
	for i, f := range root.children {
		if i > 0 {
			e.b.WriteByte('\n')
		}
		fv := v.FieldByIndex(f.index)
		if ex.IsValid() && (f.name == "plugins" || f.name == "notify") {
			if !e.liveExamples {
				e.prefix = "# "
			}
			e.key(f, ex.FieldByIndex(f.index), 0)
			e.prefix = ""
			continue
		}
		e.key(f, fv, 0)
	}
}

func (e *emitter) line(indent int, s string) {
	e.b.WriteString(strings.TrimRight(e.prefix+strings.Repeat(" ", indent)+s, " "))
	e.b.WriteByte('\n')
}

// comment writes the documentation of pattern, wrapped.
func (e *emitter) comment(indent int, pattern string, f *field, def reflect.Value) {
	if !e.comments {
		return
	}
	d, ok := e.docs[pattern]
	if !ok {
		return
	}
	text := d.doc
	if f != nil && (f.isLeaf() || f.kind == kindHeaders) {
		dt := d.def
		if dt == "" {
			dt = describeDefault(f, def)
		}
		if e.hostname != "" {
			dt = strings.ReplaceAll(dt, "<hostname>", e.hostname)
		}
		text += " Default: " + dt + "."
		if d.allowed != "" {
			text += " Allowed: " + d.allowed + "."
		}
	}
	// The width always leaves room for the "# " of commented-out examples,
	// so that removing it gives exactly the text of a live block.
	width := max(commentWidth-len("# ")-indent-len("# "), 30)
	for _, l := range wrap(text, width) {
		e.line(indent, "# "+l)
	}
}

func wrap(text string, width int) []string {
	var out []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(cur)+1+len(w) > width {
			out = append(out, cur)
			cur = w
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += w
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// describeDefault renders a default value for a comment.
func describeDefault(f *field, v reflect.Value) string {
	if !v.IsValid() {
		return "empty"
	}
	switch f.kind {
	case kindString:
		if v.String() == "" {
			return "empty"
		}
		return quoteString(v.String())
	case kindPrefixes, kindAddrs, kindStrings, kindHeaders:
		if v.Len() == 0 {
			return "empty"
		}
	}
	return scalarText(f, v)
}

// nestedExamples are the instance maps inside a live section whose
// starter shows a commented-out example (the whole example blocks of
// plugins and notify are exampleConfig's).
var nestedExamples = map[string]func() any{
	"sensors.nats.embedded.sensors": func() any {
		return map[string]EmbeddedSensor{"site-a": {Password: "change-me"}}
	},
}

// key writes one key (with its comment) and what is below it. v is its value.
func (e *emitter) key(f *field, v reflect.Value, indent int) {
	if f.optional && v.IsNil() {
		return // an absent block
	}
	if ex, ok := nestedExamples[f.pattern]; ok && e.comments && e.prefix == "" && v.Len() == 0 {
		if !e.liveExamples {
			e.prefix = "# "
			defer func() { e.prefix = "" }()
		}
		v = reflect.ValueOf(ex())
	}
	if e.comments {
		e.comment(indent, f.pattern, f, defaultOf(f))
	}
	switch f.kind {
	case kindSection:
		if f.optional {
			v = v.Elem()
		}
		e.line(indent, f.name+":")
		for _, c := range f.children {
			e.key(c, v.FieldByIndex(c.index), indent+2)
		}
	case kindInstances:
		if v.Len() == 0 {
			e.line(indent, f.name+": {}")
			return
		}
		e.line(indent, f.name+":")
		for _, name := range sortedKeys(v) {
			e.comment(indent+2, f.pattern+".*", nil, reflect.Value{})
			e.line(indent+2, name+":")
			inst := v.MapIndex(reflect.ValueOf(name))
			for _, c := range f.children {
				e.key(c, inst.FieldByIndex(c.index), indent+4)
			}
		}
	case kindHeaders:
		if v.Len() == 0 {
			e.line(indent, f.name+": {}")
			return
		}
		e.line(indent, f.name+":")
		for _, name := range sortedKeys(v) {
			e.line(indent+2, quoteString(name)+": "+quoteString(v.MapIndex(reflect.ValueOf(name)).String()))
		}
	case kindPrefixes, kindAddrs, kindStrings:
		if v.Len() == 0 {
			e.line(indent, f.name+": []")
			return
		}
		e.line(indent, f.name+":")
		for i := range v.Len() {
			e.line(indent+2, "- "+itemText(v.Index(i)))
		}
	case kindString:
		s := v.String()
		if block, ok := literalBlock(s, indent+2); ok {
			e.line(indent, f.name+": "+block[0])
			for _, l := range block[1:] {
				if l == "" {
					e.b.WriteString(strings.TrimRight(e.prefix, " ") + "\n")
					continue
				}
				e.line(0, l)
			}
			return
		}
		e.line(indent, f.name+": "+quoteString(s))
	default:
		e.line(indent, f.name+": "+scalarText(f, v))
	}
}

// defaultOf gives the default value of a leaf for its comment: from
// Defaults(), or from a new instance's defaults for keys under an instance.
func defaultOf(f *field) reflect.Value {
	if !f.isLeaf() && f.kind != kindHeaders {
		return reflect.Value{}
	}
	c := Defaults()
	v := reflect.ValueOf(&c).Elem()
	root := schema()
	segs := strings.Split(f.pattern, ".")
	cur := root
	for i := 0; i < len(segs); i++ {
		child := cur.byName[segs[i]]
		if child == nil {
			return reflect.Value{}
		}
		fv := v.FieldByIndex(child.index)
		switch child.kind {
		case kindInstances:
			inst := reflect.New(child.typ.Elem())
			if d, ok := inst.Interface().(instance); ok {
				d.SetDefaults()
			}
			v = inst.Elem()
			i++ // skip "*"
		case kindSection:
			if child.optional {
				fv = reflect.New(child.typ.Elem()).Elem()
			}
			v = fv
		default:
			return fv
		}
		cur = child
	}
	return reflect.Value{}
}

func sortedKeys(m reflect.Value) []string {
	keys := make([]string, 0, m.Len())
	for _, k := range m.MapKeys() {
		keys = append(keys, k.String())
	}
	slices.Sort(keys)
	return keys
}

func scalarText(f *field, v reflect.Value) string {
	switch f.kind {
	case kindBool:
		return strconv.FormatBool(v.Bool())
	case kindInt:
		return strconv.FormatInt(v.Int(), 10)
	case kindDuration:
		return Duration(v.Int()).String()
	case kindString:
		return quoteString(v.String())
	}
	return fmt.Sprint(v.Interface())
}

func itemText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case netip.Prefix:
		return x.String()
	case netip.Addr:
		return x.String()
	case string:
		return quoteString(x)
	}
	return fmt.Sprint(v.Interface())
}

// quoteString writes s plain when that reads back as the same string, and
// double-quoted otherwise.
func quoteString(s string) string {
	if plainSafe(s) {
		return s
	}
	return strconv.Quote(s)
}

// plainSafe reports whether s can be written as a plain YAML scalar and read
// back as the same string: a conservative character set, and nothing YAML
// would read as a number, boolean or null.
func plainSafe(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		ok := ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' ||
			strings.IndexByte("_./+-", ch) >= 0 || (ch == ':' && i+1 < len(s) && s[i+1] != ' ')
		if !ok {
			return false
		}
	}
	if strings.IndexByte("-.:+", s[0]) >= 0 || s[len(s)-1] == ':' {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~":
		return false
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return false
	}
	// Last, ask the parser itself: s must read back as the same plain string.
	f, err := parser.ParseBytes([]byte("k: "+s+"\n"), 0)
	if err != nil || len(f.Docs) != 1 {
		return false
	}
	mv, ok := f.Docs[0].Body.(*ast.MappingValueNode)
	if !ok {
		if m, isMap := f.Docs[0].Body.(*ast.MappingNode); isMap && len(m.Values) == 1 {
			mv = m.Values[0]
		} else {
			return false
		}
	}
	sn, ok := mv.Value.(*ast.StringNode)
	return ok && sn.Value == s && sn.GetToken().Type == token.StringType
}

// literalBlock renders a multi-line string as a YAML block literal (| or |-),
// when it reads back exactly; indent is the indentation of its lines.
func literalBlock(s string, indent int) ([]string, bool) {
	if !strings.Contains(s, "\n") || !utf8.ValidString(s) || strings.HasSuffix(s, "\n\n") || strings.ContainsAny(s, "\r\t") {
		return nil, false
	}
	indicator := "|-"
	body := s
	if strings.HasSuffix(s, "\n") {
		indicator = "|"
		body = strings.TrimSuffix(s, "\n")
	}
	lines := strings.Split(body, "\n")
	if lines[0] == "" || lines[0][0] == ' ' {
		return nil, false
	}
	out := []string{indicator}
	for _, l := range lines {
		if l != strings.TrimRightFunc(l, unicode.IsSpace) || strings.ContainsFunc(l, func(r rune) bool { return unicode.IsControl(r) || r == '\uFEFF' }) {
			return nil, false
		}
		if l == "" {
			out = append(out, "")
			continue
		}
		out = append(out, strings.Repeat(" ", indent)+l)
	}
	return out, true
}
