package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The decoder walks goccy/go-yaml's AST against the schema itself instead of
// using yaml.Unmarshal with yaml.Strict(): the strict decoder stops at the
// first problem, while the contract wants every problem at once, each with
// its file:line. Walking the AST gives a position for every key and value.

// nodeBudget bounds the nodes visited, aliases expanded, so that a small
// file of nested aliases cannot make the loader do unbounded work.
const nodeBudget = 200_000

// origin records where a key got its value.
type origin struct {
	keyLine, keyCol int  // the key in the file
	line, col       int  // the value in the file
	literal         bool // the value is a block literal (|)
	env             string
}

// loader holds the state of one Load: where values came from and the
// problems found so far.
type loader struct {
	file     string
	root     *field
	problems []Problem
	origins  map[string]origin // concrete dotted paths ("plugins.routerapi.core.port", "networks[1]")
	bad      map[string]bool   // paths with a decode problem, skipped by the validator
	warnings []string
	src      []byte
	// structMode is set by Config.Validate: there are no origins, and a
	// plugin port of 0 means "not set".
	structMode bool

	// per document
	aliasTarget map[*ast.AliasNode]ast.Node
	active      map[ast.Node]bool
	budget      int
	mergeDepth  int
}

// maxMergeDepth bounds merge keys within merged mappings.
const maxMergeDepth = 32

func newLoader(file string) *loader {
	return &loader{
		file:    file,
		root:    schema(),
		origins: map[string]origin{},
		bad:     map[string]bool{},
	}
}

// problemAt records a problem at a file position.
func (l *loader) problemAt(line, col int, key, msg string) {
	l.problems = append(l.problems, Problem{File: l.file, Line: line, Column: col, Key: key, Msg: msg})
}

func (l *loader) problemNode(n ast.Node, key, msg string) {
	line, col := pos(n)
	l.problemAt(line, col, key, msg)
	if key != "" {
		l.bad[key] = true
	}
}

// where finds the origin of path or of its nearest ancestor that has one.
func (l *loader) where(path string) (origin, bool) {
	for p := path; p != ""; p = parent(p) {
		if o, ok := l.origins[p]; ok {
			return o, true
		}
	}
	return origin{}, false
}

// parent strips the last ".key" or "[i]" of a path.
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// problem records a problem about a key's value, at the value's position (or
// the variable that set it).
func (l *loader) problem(path, msg string) {
	l.report(path, msg, false)
}

// problemKey records a problem about a key as a whole (such as a missing
// required key below it), at the key's position.
func (l *loader) problemKey(path, msg string) {
	l.report(path, msg, true)
}

func (l *loader) report(path, msg string, atKey bool) {
	p := Problem{Key: path, Msg: msg}
	o, ok := l.origins[path]
	if !ok {
		// Not set itself (a missing key): point at the nearest ancestor's key.
		atKey = true
		o, ok = l.where(path)
	}
	switch {
	case ok && o.env != "":
		p.Env = o.env
	case ok && atKey:
		p.File, p.Line, p.Column = l.file, o.keyLine, o.keyCol
	case ok:
		p.File, p.Line, p.Column = l.file, o.line, o.col
	default:
		p.File = l.file
	}
	if path != "" {
		l.bad[path] = true
	}
	l.problems = append(l.problems, p)
}

func pos(n ast.Node) (int, int) {
	if n == nil {
		return 0, 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// yamlHint adds what to change to the parser's messages that do not say
// it, and writes a tab as \t.
func yamlHint(msg string) string {
	switch {
	case strings.Contains(msg, "'\t'"):
		return strings.ReplaceAll(msg, "'\t'", `'\t' (a tab)`) + "; indent with spaces, not tabs"
	case strings.Contains(msg, "already defined"):
		return msg + "; a key may appear once in a mapping: keep one of them"
	}
	return msg
}

// decodeFile parses src and decodes it into c. Problems are recorded.
func (l *loader) decodeFile(src []byte, c *Config) {
	src = bytes.TrimPrefix(src, []byte("\uFEFF")) // a byte order mark some editors write
	l.src = src
	f, err := parseYAML(src)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
			p := ye.GetToken().Position
			l.problemAt(p.Line, p.Column, "", "not valid YAML: "+yamlHint(ye.GetMessage()))
		} else {
			l.problemAt(0, 0, "", "not valid YAML: "+err.Error())
		}
		return
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if _, ok := d.Body.(*ast.DirectiveNode); ok {
			continue
		}
		if body != nil {
			line, col := pos(d.Body)
			l.problemAt(line, col, "", "a second YAML document; put every key in one document (remove the --- line)")
			break
		}
		body = d.Body
	}
	if body == nil {
		return // empty file: defaults
	}
	l.aliasTarget = map[*ast.AliasNode]ast.Node{}
	l.active = map[ast.Node]bool{}
	l.budget = nodeBudget
	collectAnchors(body, map[string]ast.Node{}, l.aliasTarget, 0)
	l.section(body, l.root, "", reflect.ValueOf(c).Elem())
}

// parseYAML parses src, turning a panic inside the parser (a bug in the
// library, seen only with fuzzed input) into an error.
func parseYAML(src []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the YAML parser failed on this input (%v)", r)
		}
	}()
	return parser.ParseBytes(src, 0)
}

// collectAnchors records, in document order, the node each alias refers to
// (the latest anchor of that name before it, as YAML defines).
func collectAnchors(n ast.Node, current map[string]ast.Node, out map[*ast.AliasNode]ast.Node, depth int) {
	if n == nil || depth > 10_000 {
		return
	}
	switch x := n.(type) {
	case *ast.AnchorNode:
		if x.Name != nil {
			current[tokenValue(x.Name)] = x.Value
		}
		collectAnchors(x.Value, current, out, depth+1)
	case *ast.AliasNode:
		if x.Value != nil {
			out[x] = current[tokenValue(x.Value)]
		}
	case *ast.MappingNode:
		for _, v := range x.Values {
			collectAnchors(v, current, out, depth+1)
		}
	case *ast.MappingValueNode:
		collectAnchors(x.Key, current, out, depth+1)
		collectAnchors(x.Value, current, out, depth+1)
	case *ast.MappingKeyNode:
		collectAnchors(x.Value, current, out, depth+1)
	case *ast.SequenceNode:
		for _, v := range x.Values {
			collectAnchors(v, current, out, depth+1)
		}
	case *ast.TagNode:
		collectAnchors(x.Value, current, out, depth+1)
	}
}

func tokenValue(n ast.Node) string {
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}

// resolve follows anchors, aliases and tags to the node holding the value.
// forceString is set by a !!str tag. release must be called when the value
// has been decoded (it ends the alias-cycle guard). ok is false when a
// problem was recorded.
func (l *loader) resolve(n ast.Node, path string) (node ast.Node, forceString bool, release func(), ok bool) {
	var held []ast.Node
	release = func() {
		for _, h := range held {
			delete(l.active, h)
		}
	}
	for range 64 {
		l.budget--
		if l.budget < 0 {
			if l.budget == -1 {
				line, col := pos(n)
				l.problemAt(line, col, path, "the file is too large once its aliases are expanded; write the values out instead of nesting aliases")
			}
			return nil, false, release, false
		}
		switch x := n.(type) {
		case *ast.AnchorNode:
			if x.Value != nil {
				l.active[x.Value] = true
				held = append(held, x.Value)
			}
			n = x.Value
		case *ast.AliasNode:
			target := l.aliasTarget[x]
			if target == nil {
				// The name is not shown: a value that starts with * (a
				// password, say) reads as an alias.
				l.problemNode(x, path, "a value that starts with * is an alias, and no anchor (&name) of its name is defined before it; quote the value if it is text (the value is not shown)")
				return nil, false, release, false
			}
			if l.active[target] {
				l.problemNode(x, path, fmt.Sprintf("alias *%s refers to a value that contains it; remove the loop", tokenValue(x.Value)))
				return nil, false, release, false
			}
			l.active[target] = true
			held = append(held, target)
			n = target
		case *ast.TagNode:
			tag := tokenValue(x)
			switch tag {
			case "!!str":
				forceString = true
			case "!!int", "!!bool", "!!float", "!!null", "!!map", "!!seq":
			default:
				l.problemNode(x, path, "a value that starts with ! is a YAML tag, and only !!str, !!int, !!bool, !!float, !!null, !!map and !!seq are supported; quote the value if it is text (the value is not shown)")
				return nil, false, release, false
			}
			n = x.Value
		default:
			return n, forceString, release, true
		}
	}
	l.problemNode(n, path, "too many nested anchors, aliases or tags; write the value out")
	return nil, false, release, false
}

// entry is one key: value pair of a mapping, merge keys expanded.
type entry struct {
	key   string
	kn    ast.Node // key node, for its position
	value ast.Node
}

// entries lists the pairs of a mapping node, expanding merge keys (<<):
// keys written in the mapping win over merged ones, and earlier merged
// mappings win over later ones. ok is false when n is not a mapping.
func (l *loader) entries(n ast.Node, path string) ([]entry, bool) {
	var pairs []*ast.MappingValueNode
	switch x := n.(type) {
	case *ast.MappingNode:
		pairs = x.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{x}
	default:
		return nil, false
	}
	var out, merged []entry
	seen := map[string]bool{}
	for _, p := range pairs {
		if p == nil {
			continue
		}
		if _, isMerge := p.Key.(*ast.MergeKeyNode); isMerge {
			merged = append(merged, l.mergeSources(p.Value, path)...)
			continue
		}
		key, ok := l.keyText(p.Key, path)
		if !ok {
			continue
		}
		seen[key] = true
		out = append(out, entry{key: key, kn: p.Key, value: p.Value})
	}
	for _, e := range merged {
		if !seen[e.key] {
			seen[e.key] = true
			out = append(out, e)
		}
	}
	return out, true
}

func (l *loader) mergeSources(v ast.Node, path string) []entry {
	l.mergeDepth++
	defer func() { l.mergeDepth-- }()
	if l.mergeDepth > maxMergeDepth {
		l.problemNode(v, path, fmt.Sprintf("merge keys (<<) nested more than %d deep; write the values out", maxMergeDepth))
		return nil
	}
	node, _, release, ok := l.resolve(v, path)
	defer release()
	if !ok {
		return nil
	}
	if seq, isSeq := node.(*ast.SequenceNode); isSeq {
		var out []entry
		for _, item := range seq.Values {
			out = append(out, l.mergeSources(item, path)...)
		}
		return out
	}
	es, isMap := l.entries(node, path)
	if !isMap {
		l.problemNode(node, path, "a merge key (<<) takes a mapping or a list of mappings; give it an alias of a mapping")
		return nil
	}
	return es
}

// keyText gives a mapping key as text; only scalar keys are keys here.
func (l *loader) keyText(k ast.MapKeyNode, path string) (string, bool) {
	var n ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		n = mk.Value
	}
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode, *ast.InfinityNode, *ast.NanNode:
		return tokenValue(x), true
	}
	l.problemNode(k, "", fmt.Sprintf("a key under %s is not a plain name; write keys as plain words", displayPath(path)))
	return "", false
}

func displayPath(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

// section decodes a mapping into the struct v following the keys of f.
func (l *loader) section(n ast.Node, f *field, path string, v reflect.Value) {
	node, _, release, ok := l.resolve(n, path)
	defer release()
	if !ok {
		return
	}
	if _, isNull := node.(*ast.NullNode); isNull || node == nil {
		return // "server:" with nothing under it keeps the defaults
	}
	es, isMap := l.entries(node, path)
	if !isMap {
		l.problemNode(node, path, fmt.Sprintf("want a mapping of keys (%s), got %s", strings.Join(f.childNames(), ", "), describeNode(node, false)))
		return
	}
	for _, e := range es {
		child := f.byName[e.key]
		cpath := join(path, e.key)
		if child == nil {
			if path == "" && strings.HasPrefix(e.key, "x-") {
				continue // extension keys hold anchors for reuse, as in compose files
			}
			l.problemNode(e.kn, cpath, unknownKeyMsg(l.root, f, path, e.key))
			continue
		}
		kl, kc := pos(e.kn)
		vl, vc := pos(e.value)
		if vl == 0 {
			vl, vc = kl, kc
		}
		l.origins[cpath] = origin{keyLine: kl, keyCol: kc, line: vl, col: vc}
		l.value(e.value, child, cpath, v.FieldByIndex(child.index))
	}
}

func unknownKeyMsg(root, f *field, path, key string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if s := suggest(key, f.childNames()); s != "" {
		return msg + fmt.Sprintf("; did you mean %q?", s)
	}
	if other := elsewhere(root, strings.ToLower(key)); len(other) > 0 {
		return msg + fmt.Sprintf("; it belongs under %s", strings.Join(mapParents(other), " or "))
	}
	return msg + fmt.Sprintf("; the keys of %s are %s", displayPath(path), strings.Join(f.childNames(), ", "))
}

func mapParents(patterns []string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = strings.ReplaceAll(parent(p), "*", "<name>")
		if out[i] == "" {
			out[i] = "the top level"
		}
	}
	return out
}

// value decodes node n into v, the field f at path.
func (l *loader) value(n ast.Node, f *field, path string, v reflect.Value) {
	switch f.kind {
	case kindSection:
		if f.optional {
			// Writing the block's key makes the block present, even empty.
			if v.IsNil() {
				v.Set(reflect.New(f.typ.Elem()))
			}
			l.section(n, f, path, v.Elem())
			return
		}
		l.section(n, f, path, v)
	case kindInstances:
		l.instances(n, f, path, v)
	case kindHeaders:
		l.headers(n, f, path, v)
	case kindPrefixes, kindAddrs, kindStrings:
		l.list(n, f, path, v)
	default:
		node, forceString, release, ok := l.resolve(n, path)
		defer release()
		if !ok {
			return
		}
		sc, isScalar := yamlScalar(node, forceString)
		if !isScalar {
			l.problemNode(node, path, fmt.Sprintf("want %s, got %s", want(f), describeNode(node, f.secret)))
			return
		}
		if lit, isLit := node.(*ast.LiteralNode); isLit && strings.HasPrefix(tokenValue(lit), "|") {
			o := l.origins[path]
			o.literal = true
			l.origins[path] = o
		}
		if msg := setScalar(f, v, sc); msg != "" {
			l.problemNode(node, path, msg)
		}
	}
}

func (l *loader) instances(n ast.Node, f *field, path string, v reflect.Value) {
	node, _, release, ok := l.resolve(n, path)
	defer release()
	if !ok {
		return
	}
	if _, isNull := node.(*ast.NullNode); isNull || node == nil {
		return
	}
	es, isMap := l.entries(node, path)
	if !isMap {
		l.problemNode(node, path, fmt.Sprintf("want a mapping of instance names to their keys (e.g. %s: {enabled: true, ...}), got %s", exampleName(path), describeNode(node, false)))
		return
	}
	for _, e := range es {
		ipath := join(path, e.key)
		kl, kc := pos(e.kn)
		vl, vc := pos(e.value)
		if vl == 0 {
			vl, vc = kl, kc
		}
		if msg := checkName(e.key); msg != "" {
			l.problemAt(kl, kc, ipath, msg)
			l.bad[ipath] = true
			continue
		}
		l.origins[ipath] = origin{keyLine: kl, keyCol: kc, line: vl, col: vc}
		inst := instanceValue(v, e.key)
		l.section(e.value, f, ipath, inst)
		setInstance(v, e.key, inst)
	}
}

// instanceValue returns a settable copy of the instance name in map v, or a
// new instance with its defaults.
func instanceValue(m reflect.Value, name string) reflect.Value {
	inst := reflect.New(m.Type().Elem()).Elem()
	if !m.IsNil() {
		if cur := m.MapIndex(reflect.ValueOf(name)); cur.IsValid() {
			inst.Set(cur)
			return inst
		}
	}
	if d, ok := inst.Addr().Interface().(instance); ok {
		d.SetDefaults()
	}
	return inst
}

func setInstance(m reflect.Value, name string, inst reflect.Value) {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	m.SetMapIndex(reflect.ValueOf(name), inst)
}

func exampleName(path string) string {
	if strings.HasPrefix(path, "notify") {
		return "phone"
	}
	return "home"
}

func (l *loader) headers(n ast.Node, f *field, path string, v reflect.Value) {
	node, _, release, ok := l.resolve(n, path)
	defer release()
	if !ok {
		return
	}
	if _, isNull := node.(*ast.NullNode); isNull || node == nil {
		return
	}
	es, isMap := l.entries(node, path)
	if !isMap {
		l.problemNode(node, path, fmt.Sprintf("want a mapping of header names to values (e.g. Authorization: Bearer <token>), got %s", describeNode(node, false)))
		return
	}
	for _, e := range es {
		hpath := path + "." + e.key
		kl, kc := pos(e.kn)
		vl, vc := pos(e.value)
		if vl == 0 {
			vl, vc = kl, kc
		}
		l.origins[hpath] = origin{keyLine: kl, keyCol: kc, line: vl, col: vc}
		vn, forceString, release, ok := l.resolve(e.value, hpath)
		if !ok {
			release()
			continue
		}
		sc, isScalar := yamlScalar(vn, forceString)
		release()
		if !isScalar || sc.kind == scalarNull {
			l.problemNode(vn, hpath, "want a header value (text), got "+describeNode(vn, true))
			continue
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf(e.key), reflect.ValueOf(sc.text))
	}
}

// setHeader sets a header from the environment, replacing one of the file
// whose name differs only in case.
func setHeader(m reflect.Value, name, value string) {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	for _, k := range m.MapKeys() {
		if strings.EqualFold(k.String(), name) {
			m.SetMapIndex(k, reflect.Value{})
		}
	}
	m.SetMapIndex(reflect.ValueOf(name), reflect.ValueOf(value))
}

func (l *loader) list(n ast.Node, f *field, path string, v reflect.Value) {
	node, _, release, ok := l.resolve(n, path)
	defer release()
	if !ok {
		return
	}
	out := reflect.MakeSlice(f.typ, 0, 0)
	if _, isNull := node.(*ast.NullNode); !isNull && node != nil {
		seq, isSeq := node.(*ast.SequenceNode)
		if !isSeq {
			l.problemNode(node, path, fmt.Sprintf("want a list, got %s; write it as [%s] or one \"- item\" per line", describeNode(node, false), tokenValue(node)))
			return
		}
		for i, item := range seq.Values {
			ipath := fmt.Sprintf("%s[%d]", path, i)
			il, ic := pos(item)
			l.origins[ipath] = origin{keyLine: il, keyCol: ic, line: il, col: ic}
			in, forceString, rel, ok := l.resolve(item, ipath)
			if !ok {
				rel()
				l.bad[path] = true
				continue
			}
			sc, isScalar := yamlScalar(in, forceString)
			rel()
			if !isScalar || sc.kind == scalarNull {
				l.problemNode(in, ipath, fmt.Sprintf("want %s as a list item, got %s", wantItem(f), describeNode(in, false)))
				l.bad[path] = true
				continue
			}
			elem, msg := parseItem(f, sc.text)
			if msg != "" {
				l.problemNode(in, ipath, msg)
				l.bad[path] = true
				continue
			}
			out = reflect.Append(out, elem)
		}
	}
	setList(v, out)
}

// setList stores a decoded list; an empty list is nil, as in Defaults.
func setList(v, list reflect.Value) {
	if list.Len() == 0 {
		v.Set(reflect.Zero(v.Type()))
		return
	}
	v.Set(list)
}

// scalarKind tells how a scalar was written.
type scalarKind int

const (
	scalarPlain  scalarKind = iota // unquoted text
	scalarQuoted                   // quoted, block literal or !!str
	scalarInt
	scalarFloat
	scalarBool
	scalarNull
	scalarEnv // an environment variable's value
)

type scalar struct {
	text string
	kind scalarKind
	num  any // int64 or uint64 for scalarInt from YAML
}

// yamlScalar converts a resolved node to a scalar; false for mappings and lists.
func yamlScalar(n ast.Node, forceString bool) (scalar, bool) {
	var sc scalar
	switch x := n.(type) {
	case *ast.StringNode:
		sc = scalar{text: x.Value, kind: scalarPlain}
		if tk := x.GetToken(); tk != nil && (tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType) {
			sc.kind = scalarQuoted
		}
	case *ast.LiteralNode:
		if x.Value != nil {
			sc = scalar{text: x.Value.Value, kind: scalarQuoted}
		} else {
			sc = scalar{kind: scalarQuoted}
		}
	case *ast.IntegerNode:
		sc = scalar{text: tokenValue(x), kind: scalarInt, num: x.Value}
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		sc = scalar{text: tokenValue(x), kind: scalarFloat}
	case *ast.BoolNode:
		sc = scalar{text: tokenValue(x), kind: scalarBool}
	case *ast.NullNode:
		sc = scalar{text: "", kind: scalarNull}
	case nil:
		sc = scalar{kind: scalarNull}
	default:
		return scalar{}, false
	}
	if forceString && sc.kind != scalarNull {
		sc.kind = scalarQuoted
	}
	return sc, true
}

// describeNode names what was found, for "got ..." in messages.
func describeNode(n ast.Node, secret bool) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "nothing"
	}
	if secret {
		return "a value that is not text"
	}
	return strconv.Quote(tokenValue(n))
}

func describeScalar(sc scalar, secret bool) string {
	switch {
	case sc.kind == scalarNull:
		return "nothing"
	case secret:
		return "a value of the wrong form (not shown: secret)"
	default:
		return strconv.Quote(sc.text)
	}
}

// want names the type a leaf takes, for messages.
func want(f *field) string {
	switch f.kind {
	case kindString:
		return "text"
	case kindInt:
		return "a whole number"
	case kindBool:
		return "true or false"
	case kindDuration:
		return "a duration such as 90s, 15m or 720h"
	}
	return "a value"
}

func wantItem(f *field) string {
	switch f.kind {
	case kindPrefixes:
		if f.bareAddr {
			return "an IP address or CIDR prefix"
		}
		return "a CIDR prefix such as 192.168.1.0/24"
	case kindAddrs:
		return "an IP address"
	}
	return "text"
}

// setScalar stores a scalar in the leaf v, returning a problem message or "".
// The same rules serve YAML values and environment values.
func setScalar(f *field, v reflect.Value, sc scalar) string {
	switch f.kind {
	case kindString:
		v.SetString(sc.text) // null is ""; numbers and booleans keep their text
	case kindInt:
		n, msg := intOf(sc)
		if msg != "" {
			return msg
		}
		v.SetInt(n)
	case kindBool:
		switch {
		case (sc.kind == scalarBool || sc.kind == scalarEnv) && isTrue(sc.text):
			v.SetBool(true)
		case (sc.kind == scalarBool || sc.kind == scalarEnv) && isFalse(sc.text):
			v.SetBool(false)
		default:
			return "want true or false, got " + describeScalar(sc, f.secret)
		}
	case kindDuration:
		switch sc.kind {
		case scalarPlain, scalarQuoted, scalarEnv, scalarInt, scalarFloat:
			d, err := ParseDuration(sc.text)
			if err != nil {
				return err.Error()
			}
			v.SetInt(int64(d)) // a Duration or a time.Duration field
		default:
			return fmt.Sprintf("%s, got %s", errDurationSyntax, describeScalar(sc, false))
		}
	default:
		return "want " + want(f)
	}
	return ""
}

func isTrue(s string) bool  { return s == "true" || s == "True" || s == "TRUE" }
func isFalse(s string) bool { return s == "false" || s == "False" || s == "FALSE" }

// intOf reads a whole number: a YAML integer, or (from the environment) a
// decimal number. Range checks belong to the validator.
func intOf(sc scalar) (int64, string) {
	switch sc.kind {
	case scalarInt:
		switch n := sc.num.(type) {
		case int64:
			return n, ""
		case uint64:
			if n <= math.MaxInt64 {
				return int64(n), ""
			}
		}
		return 0, fmt.Sprintf("want a whole number, got %q, which is far too large", sc.text)
	case scalarEnv:
		n, err := strconv.ParseInt(strings.TrimSpace(sc.text), 10, 64)
		if err == nil {
			return n, ""
		}
		if allDigits(strings.TrimPrefix(strings.TrimSpace(sc.text), "-")) {
			return 0, fmt.Sprintf("want a whole number, got %q, which is far too large", sc.text)
		}
	case scalarPlain:
		if allDigits(strings.TrimPrefix(sc.text, "-")) {
			return 0, fmt.Sprintf("want a whole number, got %q, which is far too large", sc.text)
		}
	case scalarQuoted:
		if _, err := strconv.ParseInt(sc.text, 10, 64); err == nil {
			return 0, fmt.Sprintf("want a whole number, got the text %q; remove the quotes", sc.text)
		}
	case scalarFloat:
		return 0, fmt.Sprintf("want a whole number, got %q; remove the fraction", sc.text)
	}
	return 0, "want a whole number, got " + describeScalar(sc, false)
}

// parseItem parses one list item of f from text.
func parseItem(f *field, text string) (reflect.Value, string) {
	switch f.kind {
	case kindPrefixes:
		p, msg := parsePrefixItem(text, f.bareAddr)
		return reflect.ValueOf(p), msg
	case kindAddrs:
		a, err := netip.ParseAddr(strings.TrimSpace(text))
		if err != nil {
			hint := ""
			if strings.Contains(text, "/") {
				hint = "; give single addresses, without /bits"
			}
			return reflect.Value{}, fmt.Sprintf("want an IP address such as 192.168.1.1, got %q%s", text, hint)
		}
		return reflect.ValueOf(a), ""
	default:
		return reflect.ValueOf(text), ""
	}
}

func parsePrefixItem(text string, bareAddr bool) (netip.Prefix, string) {
	t := strings.TrimSpace(text)
	if p, err := netip.ParsePrefix(t); err == nil {
		return p, ""
	}
	if a, err := netip.ParseAddr(t); err == nil {
		if bareAddr {
			return netip.PrefixFrom(a, a.BitLen()), ""
		}
		return netip.Prefix{}, fmt.Sprintf("want a CIDR prefix, got the single address %q; add the prefix length, e.g. %s/24 for its network or %s/%d for the address alone", text, a, a, a.BitLen())
	}
	if bareAddr {
		return netip.Prefix{}, fmt.Sprintf("want an IP address or CIDR prefix such as 10.0.0.1 or 10.0.0.0/8, got %q", text)
	}
	return netip.Prefix{}, fmt.Sprintf("want a CIDR prefix such as 192.168.1.0/24, got %q", text)
}
