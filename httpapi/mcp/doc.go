// Package mcp is jocasta's Model Context Protocol endpoint: an MCP server
// over Streamable HTTP (the official SDK, github.com/modelcontextprotocol/go-sdk)
// whose tools read the inventory and, for read_write tokens, edit it.
//
// # Overview
//
// [Handler] returns the http.Handler that httpapi mounts at /mcp behind
// its token authentication (httpapi.Config.MCP): a request without a
// valid API token never reaches it (401). The principal the router put
// in the request context becomes the SDK's token info, so a session is
// bound to the token that opened it and every tool call knows who asks.
//
// Read tools: search_devices, get_device, change_log, list_scans,
// inventory_stats; device_traffic when a flow listener records traffic,
// device_dns when a DNS plugin records lookups, and inventory_at and
// inventory_diff when the inventory's history is there. Write tools (read_write tokens only): edit_device,
// watch_device. A session opened with a read token is served by a server
// without them, so they are not listed to it; a call of one anyway gets a
// tool error saying it needs a read_write token. Writes go through the write
// side (httpapi.Commander, events/command) with the token as actor, as
// the JSON API's do, so each is an event whose actor names the token.
//
// Tool errors (bad arguments, an unknown device, a read token on a write
// tool) are results with isError set and a sentence that says what to
// change, never a protocol error. The transport's own refusals (an
// unknown session, a session of another token, a missing Accept header)
// are problem documents, as every error of the server is (httpapi turns
// the SDK's text/plain ones into them).
package mcp
