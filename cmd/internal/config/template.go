package config

import (
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/jocasta/jocasta/projections/notify/httpnotify"
)

// BodyTemplate parses an http destination's body as the notifier does
// (httpnotify.ParseBody): what config check accepts is what serve runs.
func BodyTemplate(body string) (*template.Template, error) { return httpnotify.ParseBody(body) }

var templateErr = regexp.MustCompile(`^template: [^:]*:(\d+): (.*)$`)

// templateErrorPos extracts the line of a text/template parse error and
// finds its column, which the parser does not report: it re-parses the body
// cut after each action on that line and takes the first action whose prefix
// fails with the same message. col is 0 when no action can be blamed.
func templateErrorPos(body string, err error) (line, col int, msg string) {
	m := templateErr.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, 0, err.Error()
	}
	line, _ = strconv.Atoi(m[1])
	msg = m[2]
	lines := strings.SplitAfter(body, "\n")
	if line < 1 || line > len(lines) {
		return line, 0, msg
	}
	start := len(strings.Join(lines[:line-1], ""))
	text := lines[line-1]
	for off, tries := 0, 0; tries < maxColumnTries; tries++ {
		i := strings.Index(text[off:], "{{")
		if i < 0 {
			return line, 0, msg
		}
		actionStart := off + i
		end := len(body)
		if j := strings.Index(body[start+actionStart:], "}}"); j >= 0 {
			end = start + actionStart + j + 2
		}
		_, perr := BodyTemplate(body[:end])
		if pm := templateErr.FindStringSubmatch(errString(perr)); pm != nil && pm[1] == m[1] && pm[2] == msg {
			return line, actionStart + 1, msg
		}
		off = actionStart + 2
	}
	return line, 0, msg
}

// maxColumnTries bounds the re-parses templateErrorPos does.
const maxColumnTries = 32

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
