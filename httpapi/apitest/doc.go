// Package apitest checks HTTP responses against the OpenAPI 3.1 document
// of the JSON API (httpapi's embedded openapi.yaml), so that the document
// cannot drift from what the server does.
//
// A Validator loads and validates the document with kin-openapi once.
// Check validates one response: its status must be documented for the
// operation, its headers and body must match the documented response
// (content type exact, schemas under JSON Schema 2020-12), and a problem
// document must repeat the HTTP status and the request path. Paths and
// methods outside the document must be answered with the document's
// NotFound (404) or MethodNotAllowed (405, with Allow) problems, or a
// rate-limit problem. Responses outside /api (the UI,
// MCP) are checked only when they are problem documents.
//
// Every response a test receives should pass through a Validator: use
// Do for an http.Handler (it records with httptest.ResponseRecorder) and
// Transport for a live server (it wraps an http.Client's transport).
// Covered and Missing report which documented (operation, status) pairs
// the tests have exercised.
package apitest
