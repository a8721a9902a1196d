package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/jocasta/jocasta/httpapi"
)

const (
	ctJSON    = "application/json"
	ctProblem = "application/problem+json"
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// Validator checks responses against the API's OpenAPI document. It is
// safe for concurrent use.
type Validator struct {
	doc    *openapi3.T
	router routers.Router

	// Synthetic operations for answers outside the document's paths.
	unknownPath   *routers.Route
	unknownMethod *routers.Route
	problem       *openapi3.Schema

	mu   sync.Mutex
	seen map[string]bool // "operationId status"
}

// NewValidator loads the embedded OpenAPI document, validates it and
// builds a router over it. It fails t when the document is not valid.
func NewValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := New()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	return v
}

// New is NewValidator for callers without a testing.TB.
func New() (*Validator, error) {
	spec, err := httpapi.OpenAPIJSON()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("loading the OpenAPI document: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("the OpenAPI document is version %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing the OpenAPI document: %w", err)
	}
	v := &Validator{doc: doc, router: router, seen: map[string]bool{}}
	resp := func(name string) (*openapi3.ResponseRef, error) {
		r := doc.Components.Responses[name]
		if r == nil || r.Value == nil {
			return nil, fmt.Errorf("the OpenAPI document lacks components.responses.%s", name)
		}
		return r, nil
	}
	synthetic := func(id string, statuses map[int]string) (*routers.Route, error) {
		op := &openapi3.Operation{OperationID: id, Responses: openapi3.NewResponses()}
		for status, name := range statuses {
			r, err := resp(name)
			if err != nil {
				return nil, err
			}
			op.Responses.Set(strconv.Itoa(status), r)
		}
		return &routers.Route{Spec: doc, Operation: op}, nil
	}
	if v.unknownPath, err = synthetic("(unknown path)", map[int]string{
		404: "NotFound", 429: "TooManyRequests",
	}); err != nil {
		return nil, err
	}
	if v.unknownMethod, err = synthetic("(method not allowed)", map[int]string{
		405: "MethodNotAllowed", 429: "TooManyRequests",
	}); err != nil {
		return nil, err
	}
	ps := doc.Components.Schemas["Problem"]
	if ps == nil || ps.Value == nil {
		return nil, errors.New("the OpenAPI document lacks components.schemas.Problem")
	}
	v.problem = ps.Value
	return v, nil
}

// Check validates one response to req; body is the whole response body.
// It reports every mismatch with t.Errorf.
func (v *Validator) Check(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if err := v.Validate(req, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("apitest: %s %s answered %d, which the OpenAPI document does not allow: %v\nbody: %.2000s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, err, body)
	}
}

// Do serves req with h through an httptest.ResponseRecorder, checks the
// response and returns it with its body.
func (v *Validator) Do(t testing.TB, h http.Handler, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	body := rec.Body.Bytes()
	v.Check(t, req, resp, body)
	return resp, body
}

// Transport wraps base (nil: http.DefaultTransport) so that every
// response a client receives is read, checked and handed back with its
// body intact. Use it for tests against a live server:
//
//	c := &http.Client{Transport: v.Transport(t, nil)}
func (v *Validator) Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{t: t, v: v, base: base}
}

type roundTripper struct {
	t    testing.TB
	v    *Validator
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("apitest: reading response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rt.v.Check(rt.t, req, resp, body)
	return resp, nil
}

// Validate is Check returning the mismatch as an error instead.
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	path := req.URL.Path
	api := path == "/api" || strings.HasPrefix(path, "/api/")
	ct := header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)

	if api || mt == ctProblem {
		if id := header.Get("X-Request-Id"); !requestIDPattern.MatchString(id) {
			return fmt.Errorf("X-Request-Id header %q is missing or malformed", id)
		}
	}
	if mt == ctProblem && req.Method != http.MethodHead {
		if err := v.checkProblem(req, status, header, body); err != nil {
			return err
		}
	}
	if !api {
		return nil // the UI and MCP are not described by the document
	}
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" && status == http.StatusNoContent {
		return checkPreflight(req, header, body)
	}

	routeReq := req
	if req.Method == http.MethodHead {
		if len(body) != 0 {
			return fmt.Errorf("a HEAD answer has a body of %d bytes", len(body))
		}
		routeReq = req.Clone(context.Background())
		routeReq.Method = http.MethodGet
	}
	route, params, err := v.router.FindRoute(routeReq)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		route, params = v.unknownPath, nil
	case errors.Is(err, routers.ErrMethodNotAllowed):
		route, params = v.unknownMethod, nil
	case err != nil:
		return fmt.Errorf("routing the request: %w", err)
	}
	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		ExcludeResponseBody:   req.Method == http.MethodHead,
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: routeReq, PathParams: params, Route: route, Options: opts,
		},
		Status:  status,
		Header:  header,
		Options: opts,
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return err
	}
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("status %d is not documented", status)
	}
	if req.Method != http.MethodHead {
		if len(ref.Value.Content) == 0 {
			if len(body) != 0 {
				return fmt.Errorf("status %d is documented without a body, but the answer has %d bytes", status, len(body))
			}
		} else {
			if _, ok := ref.Value.Content[ct]; !ok {
				return fmt.Errorf("Content-Type %q is not exactly one of the documented %v", ct, mapKeys(ref.Value.Content))
			}
		}
	}
	v.mu.Lock()
	v.seen[route.Operation.OperationID+" "+strconv.Itoa(status)] = true
	v.mu.Unlock()
	return nil
}

// checkProblem checks what a schema cannot: a problem document repeats
// the HTTP status, names the request path and the request id.
func (v *Validator) checkProblem(req *http.Request, status int, header http.Header, body []byte) error {
	var p struct {
		Status    int    `json:"status"`
		Instance  string `json:"instance"`
		RequestID string `json:"request_id"`
	}
	var raw any
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("problem body is not JSON: %w", err)
	}
	if err := v.problem.VisitJSON(raw, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("problem body does not match components.schemas.Problem: %w", err)
	}
	_ = json.Unmarshal(body, &p)
	if p.Status != status {
		return fmt.Errorf("problem status %d differs from the HTTP status %d", p.Status, status)
	}
	if p.Instance != req.URL.Path {
		return fmt.Errorf("problem instance %q is not the request path %q", p.Instance, req.URL.Path)
	}
	if id := header.Get("X-Request-Id"); p.RequestID != id {
		return fmt.Errorf("problem request_id %q differs from X-Request-Id %q", p.RequestID, id)
	}
	return nil
}

func checkPreflight(req *http.Request, header http.Header, body []byte) error {
	if len(body) != 0 {
		return errors.New("a CORS preflight answer has a body")
	}
	if got, want := header.Get("Access-Control-Allow-Origin"), req.Header.Get("Origin"); got == "" || got != want {
		return fmt.Errorf("a 204 preflight answer has Access-Control-Allow-Origin %q, want the request's Origin %q", got, want)
	}
	if header.Get("Access-Control-Allow-Methods") == "" {
		return errors.New("a 204 preflight answer lacks Access-Control-Allow-Methods")
	}
	return nil
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Covered returns the documented (operation, status) pairs checked so
// far, as "operationId status", sorted.
func (v *Validator) Covered() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return mapKeys(v.seen)
}

// Missing returns the documented (operation, status) pairs that no
// checked response has exercised, as "operationId status", sorted.
func (v *Validator) Missing() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, item := range v.doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code := range op.Responses.Map() {
				k := op.OperationID + " " + code
				if !v.seen[k] {
					out = append(out, k)
				}
			}
		}
	}
	for _, r := range []*routers.Route{v.unknownPath, v.unknownMethod} {
		for code := range r.Operation.Responses.Map() {
			if k := r.Operation.OperationID + " " + code; !v.seen[k] {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
