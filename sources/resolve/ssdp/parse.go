package ssdp

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jocasta/jocasta/sources"
)

// Bounds on what the parsers accept.
const (
	maxHeaderLines = 64
	maxLocation    = 1024
	maxField       = 256
	maxXMLDepth    = 64
)

// Response is the part of an SSDP search response the resolver uses.
type Response struct {
	Location string
	USN      string
	ST       string
	Server   string
}

// SearchRequest returns the M-SEARCH request for ST ssdp:all with the
// given MX (seconds).
func SearchRequest(mx int) []byte {
	return []byte("M-SEARCH * HTTP/1.1\r\n" +
		"HOST: 239.255.255.250:1900\r\n" +
		"MAN: \"ssdp:discover\"\r\n" +
		"MX: " + strconv.Itoa(mx) + "\r\n" +
		"ST: ssdp:all\r\n" +
		"USER-AGENT: Linux/1 UPnP/1.1 jocasta/1\r\n\r\n")
}

// ParseResponse parses an SSDP search response: an "HTTP/1.x 200" status
// line and header lines (CRLF or bare LF, names case-insensitive, at most
// 64 lines). It needs a LOCATION header.
func ParseResponse(b []byte) (Response, error) {
	var r Response
	lines := strings.Split(string(b), "\n")
	status := strings.TrimRight(lines[0], "\r")
	proto, rest, _ := strings.Cut(status, " ")
	code, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	if !strings.HasPrefix(proto, "HTTP/1.") || code != "200" {
		return r, fmt.Errorf("%w: status line %.40q", ErrMalformed, status)
	}
	for i, line := range lines[1:] {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			break
		}
		if i >= maxHeaderLines {
			return r, fmt.Errorf("%w: more than %d header lines", ErrMalformed, maxHeaderLines)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue // tolerate junk lines, as HTTP/1.0 clients did
		}
		v = strings.TrimSpace(v)
		switch strings.ToUpper(strings.TrimSpace(k)) {
		case "LOCATION":
			r.Location = v
		case "USN":
			r.USN = v
		case "ST":
			r.ST = v
		case "SERVER":
			r.Server = v
		}
	}
	if r.Location == "" {
		return r, fmt.Errorf("%w: no LOCATION header", ErrMalformed)
	}
	return r, nil
}

// CheckLocation parses a LOCATION and accepts it only as an http URL whose
// host is the IP literal from (the address that sent the reply). Every
// refusal wraps ErrLocationRefused.
func CheckLocation(loc string, from netip.Addr) (*url.URL, error) {
	if len(loc) > maxLocation {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrLocationRefused, maxLocation)
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLocationRefused, err)
	}
	if !strings.EqualFold(u.Scheme, "http") || u.Opaque != "" {
		return nil, fmt.Errorf("%w: %.80q is not an http URL", ErrLocationRefused, loc)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: user information in URL", ErrLocationRefused)
	}
	host, err := netip.ParseAddr(u.Hostname())
	if err != nil || host.Zone() != "" {
		return nil, fmt.Errorf("%w: host %.80q is not an IP address", ErrLocationRefused, u.Hostname())
	}
	if host.Unmap() != from.Unmap() {
		return nil, fmt.Errorf("%w: points at %s, not at the replying host %s", ErrLocationRefused, host, from)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: port %.10q", ErrLocationRefused, p)
		}
	}
	u.Scheme = "http"
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// ParseDescription reads root/device/{friendlyName, manufacturer,
// modelName} from a UPnP device description, matching local names only.
// It tolerates sloppy XML (HTML entities, unclosed tags) and returns what
// it found when the XML breaks after the friendlyName.
func ParseDescription(b []byte) (sources.UPnP, error) {
	var u sources.UPnP
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charsetReader
	var (
		stack    []string
		sawRoot  bool
		text     strings.Builder
		capture  *string
		parseErr error
	)
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			parseErr = err
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxXMLDepth {
				parseErr = fmt.Errorf("nested deeper than %d elements", maxXMLDepth)
				break
			}
			stack = append(stack, t.Name.Local)
			if len(stack) == 1 && t.Name.Local == "root" {
				sawRoot = true
			}
			capture = nil
			if len(stack) == 3 && stack[0] == "root" && stack[1] == "device" {
				switch t.Name.Local {
				case "friendlyName":
					capture = &u.FriendlyName
				case "manufacturer":
					capture = &u.Manufacturer
				case "modelName":
					capture = &u.ModelName
				}
				text.Reset()
			}
		case xml.CharData:
			if capture != nil && text.Len() < 4*maxField {
				text.Write(t[:min(len(t), 4*maxField)])
			}
		case xml.EndElement:
			if capture != nil && len(stack) == 3 {
				*capture = cleanField(text.String())
				capture = nil
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		if parseErr != nil {
			break
		}
	}
	switch {
	case parseErr != nil && u.FriendlyName == "":
		return sources.UPnP{}, fmt.Errorf("%w: %w", ErrBadDescription, parseErr)
	case !sawRoot:
		return sources.UPnP{}, fmt.Errorf("%w: no root element", ErrBadDescription)
	case u == (sources.UPnP{}):
		return u, fmt.Errorf("%w: no friendlyName, manufacturer or modelName", ErrBadDescription)
	}
	return u, nil
}

// cleanField trims a text field, drops control characters and invalid
// UTF-8, and cuts it to maxField runes.
func cleanField(s string) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxField {
		s = string([]rune(s)[:maxField])
	}
	return s
}

// charsetReader accepts the single-byte charsets devices declare; Latin-1
// and Windows-1252 are both read as Latin-1.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "latin1", "latin-1", "iso8859-1", "windows-1252", "cp1252":
		b, err := io.ReadAll(in) // the body is already capped
		if err != nil {
			return nil, err
		}
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return strings.NewReader(string(r)), nil
	}
	return nil, errors.New("unsupported charset " + strconv.Quote(label))
}
