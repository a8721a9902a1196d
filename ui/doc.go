// Package ui is jocasta's web interface: server-rendered pages behind
// sign-in sessions, mounted by httpapi at every path outside /api and /mcp
// (httpapi.Config.UI).
//
// # Overview
//
// Pages are html/template files embedded in the binary and parsed once at
// start-up (render.go); each page has a typed view struct, and is rendered
// into a buffer before anything is written, so a template failure is a
// clean 500. The stylesheet and icon are embedded too and served at URLs
// that carry their content hash, cached for a year. There is no
// JavaScript: every page reads and works with plain links and forms, so
// the Content-Security-Policy forbids scripts altogether (CSP below).
// Colours follow prefers-color-scheme.
//
// Routes are all in ui.go (Server.routes) on the standard library's
// ServeMux, whose method patterns and PathValue do what gorilla/mux does
// for the API; STYLE.md §13 expects the move to the standard mux anyway.
//
// The read side is the projections through the small interfaces in ui.go
// (Inventory: the same methods the JSON API uses; Accounts: the access
// read model). Every change goes through Commander (events/command), with
// the signed-in user's name as the actor; ui never builds an event.
//
// # Traffic, DNS and notifications
//
// Deps.Traffic (projections/traffic), Deps.DNS (projections/dns) and
// Deps.Notifications (serve's notifications over projections/notify and
// events/command) are optional. With Traffic, the Traffic page draws the
// flows of a range on the world map of package worldmap (the map itself
// is the static file world.svg, drawn at build time; Go adds one curve
// per country, no script) with the top devices, peers and countries, and
// the device page lists the device's top peers; with DNS, the DNS page
// lists the top and most blocked domains and the clients that looked up
// most (dns.TopLookups), and the device page its top domains. Without
// them their pages say which plugin would fill them, and are not in the
// menu. The Notifications pages show each destination as the API does
// (never a URL's path or query, a token or a secret), set its rules from
// a form of rule rows (one row per rule plus an empty one; a row with no
// kind ticked is dropped), send a test message and re-deliver dead
// ledger records; the rules event has the signed-in user as its actor.
//
// # History and merges
//
// Deps.History (projections/inventory's DevicesAt, StatsAt and Diff; by
// default the Inventory's when it has them) gives the History page: the
// devices and stats at an instant (?at=, a datetime-local value in
// Config.Location) and the changes between two (?from=&to=); an instant
// before the kept history answers 410 naming, and linking, the earliest
// that works. When the Commander also implements Merger, the device page
// merges another device into the shown one and lists the merged devices
// (from the change log's device.merged entries, each checked against the
// inventory), each with a Separate button; a merged device's page says
// which device it is shown as. Both are forms with the form token and the
// signed-in user as the actor.
//
// The devices page's 100 rows are written by writeRows straight into a
// pooled buffer, which render splices into the page where the template
// wrote rowsMarker: the page allocates little besides what the inventory
// returns (docs/performance.md, The web interface).
//
// # Timeline
//
// The device page's Timeline section lists what GET
// /api/devices/{id}/timeline lists, read by the same function
// (projections/timeline.Read) from the Inventory's change log and, when
// set, Deps.Traffic's hours and Deps.DNS's (DNS.DeviceHours): newest
// first, 50 a page, paged as the Change log is (a cursor parameter, «
// Newest and Older » links that keep the range and jump to the section),
// with since and until read as the Change log reads them (dates in
// Config.Location; the last 7 days up to now when neither is given, at
// most 400 days). An hour of traffic is shown as "↓ 2.0 MB ↑ 40.0 MB, 4
// flows", an hour of lookups as "52 lookups, 40 blocked: a.example,
// b.example". The presence strip above stays its own drawing of the
// last 7 days, and the Change log below its last 50 changes of any age.
//
// # Sessions
//
// Sign-in checks the password with access.CheckPassword (argon2id, the
// same work for an unknown name) after two rate limits: per client address
// (as httpapi resolved it through server.trusted_proxies) and per account
// name. Success runs Commander.StartSession, which appends session.started
// with the SHA-256 of a new secret; the secret goes only to the cookie
// jocasta_session (HttpOnly, SameSite=Lax, Path=/, Secure per
// server.auth.cookie_secure, expiring with the session). The access
// projection keeps sessions, so they survive a restart; it drops a user's
// sessions when the user is removed or changes password. The idle timeout
// is judged from the last request of each session, which the access
// projection keeps in memory and writes with the tokens' last use once a
// minute (so after a restart it counts from the last written request, at
// most a minute early); an idle session is ended (session.ended, reason
// idle) and sent to sign in. Sign-out appends
// session.ended (reason sign_out).
//
// # Cross-site requests
//
// Every request passes Go's http.CrossOriginProtection, which refuses
// cross-origin POSTs (Sec-Fetch-Site / Origin). Every POST of a signed-in
// page must also carry the session's form token (a hidden field, an HMAC
// of the session secret), so a request that slips past the first check
// still fails. The sign-in and setup forms have no session yet and rely on
// the first check.
//
// # Setup
//
// When no account exists, serve creates a Setup with NewSetup and prints
// /setup?token=<secret> to its log. The secret is kept only in memory,
// hashed; using it creates the first account (Commander.AddUser) and
// signs in. It is then spent: a second use, or any use once an account
// exists, is refused with 410.
//
// # CSP
//
// default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self'
// data:; object-src 'none'; base-uri 'none'; form-action 'self';
// frame-ancestors 'none'. Inline style attributes are therefore refused;
// the presence timeline is an SVG whose geometry is attributes, coloured
// by classes.
//
// # Not here yet
//
// The Traffic, DNS and Notifications pages come with the issues that
// record flows, DNS lookups and notification destinations.
package ui
