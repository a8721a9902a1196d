package config

import (
	"fmt"
	"net/textproto"
	"reflect"
	"slices"
	"strings"
)

// envPrefix starts every variable that sets a key.
const envPrefix = "SVC_"

// envConfig names the configuration file; it is not a key.
const envConfig = "SVC_CONFIG"

// applyEnv applies the SVC_ variables of environ over c. environ is in
// os.Environ form ("NAME=value"); when a name repeats, the first wins, as
// with os.Getenv. Variables are applied in name order so the result does
// not depend on the order of environ.
func (l *loader) applyEnv(environ []string, c *Config) {
	vars := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) || name == envConfig {
			continue
		}
		if _, dup := vars[name]; !dup {
			vars[name] = value
		}
	}
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	slices.Sort(names)
	root := reflect.ValueOf(c).Elem()
	for _, name := range names {
		segs := strings.Split(strings.TrimPrefix(name, envPrefix), "__")
		l.envInto(l.root, root, "", segs, name, vars[name])
	}
}

// envProblem records a problem with a variable.
func (l *loader) envProblem(name, key, msg string) {
	l.problems = append(l.problems, Problem{Env: name, Key: key, Msg: msg})
}

// envInto applies the variable name=value, whose remaining path segments are
// segs, to the section f held in v at path.
func (l *loader) envInto(f *field, v reflect.Value, path string, segs []string, name, value string) {
	if len(segs) == 0 {
		l.envProblem(name, path, fmt.Sprintf("%s is a section, not a value; set one of its keys, e.g. %s", displayPath(path), envName(join(path, f.children[0].name))))
		return
	}
	seg := strings.ToLower(segs[0])
	child := f.byName[seg]
	if child == nil {
		msg := fmt.Sprintf("not a setting: %s has no key %q", displayPath(path), seg)
		if s := suggest(seg, f.childNames()); s != "" {
			msg += "; did you mean " + envName(join(path, s)) + "?"
		} else {
			msg += "; its keys are " + strings.Join(f.childNames(), ", ")
		}
		l.envProblem(name, join(path, seg), msg)
		return
	}
	cpath := join(path, seg)
	fv := v.FieldByIndex(child.index)
	rest := segs[1:]
	l.markEnv(cpath, name)
	switch child.kind {
	case kindSection:
		if child.optional && len(rest) > 0 {
			if fv.IsNil() {
				fv.Set(reflect.New(child.typ.Elem()))
			}
			fv = fv.Elem()
		}
		l.envInto(child, fv, cpath, rest, name, value)
	case kindInstances:
		if len(rest) < 2 {
			l.envProblem(name, cpath, fmt.Sprintf("name an instance and one of its keys, e.g. %s", envName(cpath+"."+strings.ToUpper(exampleName(cpath))+"."+child.children[0].name)))
			return
		}
		inst := strings.ToLower(rest[0])
		ipath := join(cpath, inst)
		if msg := checkName(inst); msg != "" {
			l.envProblem(name, ipath, msg)
			return
		}
		l.markEnv(ipath, name)
		iv := instanceValue(fv, inst)
		l.envInto(child, iv, ipath, rest[1:], name, value)
		setInstance(fv, inst, iv)
	case kindHeaders:
		if len(rest) != 1 {
			l.envProblem(name, cpath, fmt.Sprintf("set one header per variable, e.g. %s__AUTHORIZATION", envName(cpath)))
			return
		}
		h := envHeaderName(rest[0])
		hpath := cpath + "." + h
		l.origins[hpath] = origin{env: name}
		delete(l.bad, hpath)
		setHeader(fv, h, value)
	default:
		if len(rest) > 0 {
			l.envProblem(name, cpath, fmt.Sprintf("%s is a single value with no keys below it; use %s", cpath, envName(cpath)))
			return
		}
		l.origins[cpath] = origin{env: name}
		delete(l.bad, cpath)
		// The variable replaces what the file gave, its items included:
		// a problem with an item is the variable's, not the file line's.
		for p := range l.origins {
			if strings.HasPrefix(p, cpath+"[") || strings.HasPrefix(p, cpath+".") {
				delete(l.origins, p)
			}
		}
		if child.kind == kindPrefixes || child.kind == kindAddrs || child.kind == kindStrings {
			l.envList(child, fv, cpath, name, value)
			return
		}
		if msg := setScalar(child, fv, scalar{text: value, kind: scalarEnv}); msg != "" {
			l.envProblem(name, cpath, msg)
			l.bad[cpath] = true
		}
	}
}

// markEnv records that the variable name created or reached path, unless the
// file already placed it (a problem below a file section points at the file).
func (l *loader) markEnv(path, name string) {
	if _, ok := l.origins[path]; !ok {
		l.origins[path] = origin{env: name}
	}
}

// envList reads a comma-separated list. Spaces around items are ignored and
// empty items are skipped, so an empty value is an empty list.
func (l *loader) envList(f *field, v reflect.Value, path, name, value string) {
	out := reflect.MakeSlice(f.typ, 0, 0)
	i := 0
	for item := range strings.SplitSeq(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		elem, msg := parseItem(f, item)
		if msg != "" {
			l.envProblem(name, fmt.Sprintf("%s[%d]", path, i), msg)
			l.bad[path] = true
		} else {
			out = reflect.Append(out, elem)
		}
		i++
	}
	setList(v, out)
}

// envHeaderName turns the header segment of a variable into a header name:
// underscores become hyphens and the name is put in canonical form
// (X_API_KEY → X-Api-Key). HTTP header names are case-insensitive.
func envHeaderName(seg string) string {
	return textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(seg, "_", "-"))
}
