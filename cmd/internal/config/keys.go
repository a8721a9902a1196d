package config

import "maps"

// keyDoc documents one key of the schema for the starter file. The key list
// itself is the Config struct; TestKeyDocsMatchSchema checks that this table
// has exactly one entry per key.
type keyDoc struct {
	doc     string // meaning
	def     string // default, when it is not simply the value in Defaults()
	allowed string // allowed values; "" for sections
}

const durationAllowed = "a duration: a whole number and one unit, s, m or h (90s, 15m, 720h)"

// keyDocs gives the documentation of every key pattern (see patterns()).
// The text follows the contract's configuration tables.
func keyDocs() map[string]keyDoc {
	plugin := func(what string) keyDoc { return keyDoc{doc: what} }
	enabled := func(does string) keyDoc {
		return keyDoc{doc: does + " An instance is off unless it has enabled: true.", allowed: "true, false"}
	}
	host := func(what string) keyDoc {
		return keyDoc{doc: what, def: "required when enabled, no default", allowed: "an address or host name, no port"}
	}
	port := func(what, def string) keyDoc {
		return keyDoc{doc: what, def: def, allowed: "1 to 65535"}
	}
	ssl := func(what string) keyDoc {
		return keyDoc{doc: what + " Without it the password travels as plain text and a warning is logged.", allowed: "true, false"}
	}
	insecure := keyDoc{doc: "Skips certificate checks (self-signed certificates).", allowed: "true, false"}
	timeout := keyDoc{doc: "Longest one read may take.", allowed: durationAllowed + ", above 0s"}
	instance := keyDoc{doc: "An instance: its name is yours to choose (lower-case letters, digits, - and _)."}

	docs := map[string]keyDoc{
		"server":                            {doc: "The HTTP server: JSON API under /api, web interface and MCP endpoint."},
		"server.host":                       {doc: "Listen address. 0.0.0.0 listens on every interface. The container image sets 0.0.0.0.", allowed: "an address or host name"},
		"server.port":                       {doc: "Listen port.", allowed: "1 to 65535"},
		"server.trusted_proxies":            {doc: "Reverse proxies whose forwarding headers identify the client. Empty: the client address is read from the connection.", allowed: "a list of addresses or CIDR prefixes"},
		"server.base_url":                   {doc: "The address people reach the web interface at (behind a reverse proxy, the proxy's); push notifications link to devices there. Empty: no links in notifications.", def: "empty", allowed: "an http or https URL with no path, query or fragment"},
		"server.proxy_header":               {doc: "The one header the trusted proxies write the client's address to; every other forwarding header is ignored, since a client can send its own. x-forwarded-for suits nginx, HAProxy, Caddy and Traefik; forwarded is RFC 7239; x-real-ip is a single address the proxy sets.", allowed: "x-forwarded-for, forwarded, x-real-ip"},
		"server.cors":                       {doc: "Cross-origin access to /api from browsers."},
		"server.cors.allowed_origins":       {doc: "Browser origins besides the server's own that may read /api. Empty: no CORS headers are sent.", allowed: "a list of origins as scheme://host[:port]"},
		"server.auth":                       {doc: "Web sign-in sessions."},
		"server.auth.session_lifetime":      {doc: "Longest a sign-in lasts, whatever the activity.", allowed: durationAllowed + ", above 0s"},
		"server.auth.idle_timeout":          {doc: "How long a session survives with no requests.", allowed: durationAllowed + ", above 0s"},
		"server.auth.cookie_secure":         {doc: "Session cookie sent over HTTPS only. Set false to sign in over plain HTTP from anywhere but localhost.", allowed: "true, false"},
		"server.mcp":                        {doc: "The MCP endpoint."},
		"server.mcp.enabled":                {doc: "Serves the MCP endpoint at /mcp. While off, /mcp answers 404.", allowed: "true, false"},
		"db":                                {doc: "The database file."},
		"db.path":                           {doc: "Directory of the database file (and of the control socket jocasta.sock). The container image sets /data.", allowed: "a directory"},
		"db.name":                           {doc: "Name of the database file.", allowed: "a file name"},
		"logger":                            {doc: "Log output."},
		"logger.level":                      {doc: "Lowest level logged. Any other value logs at info (with a warning).", allowed: "debug, info, warn, error"},
		"logger.format":                     {doc: "Log line format. Any value but text writes JSON (with a warning).", allowed: "json, text"},
		"inventory":                         {doc: "Presence and address rules."},
		"inventory.online_window":           {doc: "How long after its last sighting a device counts as online. Past it, a watched device goes quiet.", allowed: durationAllowed + ", above 0s"},
		"inventory.address_grace":           {doc: "How long an address can go unseen before a later sweep that finds the device elsewhere retires that address. Raise it on networks with long DHCP leases.", allowed: durationAllowed},
		"retention":                         {doc: "Once an hour the service deletes records older than their window. 0s keeps that kind of record forever."},
		"retention.history":                 {doc: "Keeps the change log and the scan log.", def: "2160h (90 days)", allowed: durationAllowed + "; 0s = forever"},
		"retention.traffic":                 {doc: "Keeps hourly traffic totals.", def: "720h (30 days)", allowed: durationAllowed + "; 0s = forever"},
		"retention.dns":                     {doc: "Keeps hourly lookup counts and the addresses in lookup answers.", def: "720h (30 days)", allowed: durationAllowed + "; 0s = forever"},
		"retention.devices":                 {doc: "Keeps a device after a scan last saw it. A device that was labelled, grouped, typed, noted, ignored or watched is kept.", def: "2160h (90 days)", allowed: durationAllowed + "; 0s = forever"},
		"location":                          {doc: "Where the world map starts and which zone times are shown in."},
		"location.country":                  {doc: "Country from which the world map draws its lines. Empty: derived from the router's outside address (which cannot find the country of a network behind carrier-grade NAT).", allowed: "a two-letter country code (DE, US, ...)"},
		"location.country_db":               {doc: "An IP → country database in the MaxMind DB format (.mmdb, such as GeoLite2-Country or DB-IP's country lite) used for traffic peers instead of the embedded public-domain one.", def: "empty (the embedded database)", allowed: "a readable file path"},
		"location.timezone":                 {doc: "Zone in which times are shown. Empty: the TZ variable or the system zone (UTC in a container). Stored times are always UTC.", allowed: "an IANA zone name (Europe/Berlin, UTC, ...)"},
		"networks":                          {doc: "Prefixes the sweep covers at each interval. Each found address is recorded under the network that contains it, so networks may not overlap.", allowed: "a list of CIDR prefixes written as networks (192.168.1.0/24, not 192.168.1.5/24), at most 2^24 addresses each"},
		"scan":                              {doc: "Interval sweeps and port scans."},
		"scan.source":                       {doc: "Source name of the interval sweeps. Set it in a container, where the host name changes on every run. A new name starts a new source; past scans stay under the old name.", def: "empty, meaning sweep:<hostname>", allowed: "any name up to 128 characters"},
		"scan.devices":                      {doc: "The periodic ICMP sweep of the networks."},
		"scan.devices.enabled":              {doc: "Sweeps networks on a timer.", allowed: "true, false"},
		"scan.devices.interval":             {doc: "Sweep period.", allowed: durationAllowed + ", above 0s"},
		"scan.devices.rate":                 {doc: "Most ICMP probes sent per second.", allowed: "a whole number from 1 to 1000000"},
		"scan.devices.rounds":               {doc: "Probes to each address before it counts as down.", allowed: "a whole number from 1 to 100"},
		"scan.devices.wait":                 {doc: "Wait for replies after the last probe.", allowed: durationAllowed},
		"scan.devices.resolve_names":        {doc: "Reverse DNS for each address that answered.", allowed: "true, false"},
		"scan.devices.resolve_macs":         {doc: "Reads the neighbour table for hardware addresses.", allowed: "true, false"},
		"scan.devices.resolve_mdns":         {doc: "Asks each device without a reverse DNS name for its name over mDNS.", allowed: "true, false"},
		"scan.devices.resolve_netbios":      {doc: "Asks each device still without a name over NetBIOS.", allowed: "true, false"},
		"scan.devices.resolve_dnssd":        {doc: "Asks for advertised services; names each device still without a name after the name it gives its services. Needs host networking.", allowed: "true, false"},
		"scan.devices.resolve_ssdp":         {doc: "Searches over SSDP; names each device still without a name after its UPnP friendlyName. Needs host networking.", allowed: "true, false"},
		"scan.ports":                        {doc: "The periodic TCP port scan of every known address."},
		"scan.ports.enabled":                {doc: "Probes every known address for open TCP ports on a timer.", allowed: "true, false"},
		"scan.ports.interval":               {doc: "Port scan period.", allowed: durationAllowed + ", above 0s"},
		"scan.ports.custom":                 {doc: "Ports to probe. Empty: a preset is used. Each address is also probed on the ports its device advertises.", def: "empty (the preset)", allowed: "ports and ranges, comma separated, ranges as low-high (22,80,8000-8100); 1-65535 for every port"},
		"scan.ports.concurrency":            {doc: "Most connections a scan opens at once. Lower it on a router with a small connection table.", allowed: "a whole number from 1 to 65535"},
		"plugins":                           {doc: "Plugin sources. Plugins are off by default. Each instance sits under its kind, with a name you choose as its key (lower-case letters, digits, - and _), and is off unless it has enabled: true. Remove the leading \"# \" of an example to use it."},
		"plugins.routerapi":                 plugin("Kind routerapi: a router, switch or access point read over a REST API."),
		"plugins.routerapi.*":               instance,
		"plugins.routerapi.*.enabled":       enabled("Reads this source."),
		"plugins.routerapi.*.host":          host("Where the REST API is."),
		"plugins.routerapi.*.port":          port("REST API port.", "80, or 443 with ssl"),
		"plugins.routerapi.*.user":          {doc: "A read-only user is enough: a group with policy read,api,rest-api (docs/routers.md).", allowed: "a device user"},
		"plugins.routerapi.*.password":      {doc: "The user's password.", allowed: "any"},
		"plugins.routerapi.*.ssl":           ssl("Uses HTTPS."),
		"plugins.routerapi.*.insecure":      insecure,
		"plugins.routerapi.*.timeout":       timeout,
		"plugins.routerapi.*.topology_only": {doc: "Reads only what is connected to this switch or access point; the router lists its devices.", allowed: "true, false"},
		"plugins.rpcrouter":                 plugin("Kind rpcrouter: a router or access point read over its JSON-RPC bus served by its web server."),
		"plugins.rpcrouter.*":               instance,
		"plugins.rpcrouter.*.enabled":       enabled("Reads this source."),
		"plugins.rpcrouter.*.host":          host("Where the bus is served."),
		"plugins.rpcrouter.*.port":          port("Web server port.", "80, or 443 with ssl"),
		"plugins.rpcrouter.*.user":          {doc: "A login with an access-control profile for the service: the rpcd ACL file of docs/routers.md grants exactly the calls made.", allowed: "a device RPC login"},
		"plugins.rpcrouter.*.password":      {doc: "The login's password.", allowed: "any"},
		"plugins.rpcrouter.*.ssl":           ssl("Uses HTTPS (needs the device's TLS package for its web interface)."),
		"plugins.rpcrouter.*.insecure":      {doc: "Skips certificate checks.", allowed: "true, false"},
		"plugins.rpcrouter.*.timeout":       timeout,
		"plugins.rpcrouter.*.topology_only": {doc: "Reads only what is connected to this access point; the router lists its devices.", allowed: "true, false"},
		"plugins.flowlistener":              plugin("Kind flowlistener: a listener for a router's flow exports (UDP)."),
		"plugins.flowlistener.*":            instance,
		"plugins.flowlistener.*.enabled":    enabled("Runs this listener."),
		"plugins.flowlistener.*.listen":     {doc: "Where the listener binds.", allowed: "a UDP address, form :<port> or <ip>:<port>"},
		"plugins.flowlistener.*.exporters":  {doc: "Routers that may send. Datagrams from all other addresses are discarded.", def: "required when enabled, no default", allowed: "a list of IP addresses"},
		"plugins.dnsnode":                   plugin("Kind dnsnode: a DNS server node whose query log is read."),
		"plugins.dnsnode.*":                 instance,
		"plugins.dnsnode.*.enabled":         enabled("Reads this server's query log."),
		"plugins.dnsnode.*.host":            host("Address of this node. Do not use a virtual address shared by nodes; it reaches one node at a time."),
		"plugins.dnsnode.*.port":            port("Web service port.", "5380, or 53443 with ssl"),
		"plugins.dnsnode.*.token":           {doc: "Token for a user granted the permission to view logs.", allowed: "an API token of the DNS server"},
		"plugins.dnsnode.*.ssl":             {doc: "Uses HTTPS. Without it the token travels as plain text and a warning is logged.", allowed: "true, false"},
		"plugins.dnsnode.*.insecure":        {doc: "Skips certificate checks.", allowed: "true, false"},
		"plugins.dnsnode.*.log_app":         {doc: "The app whose log is read. Needed only if more than one installed app logs queries.", allowed: "an app name as the server's apps page lists it"},
		"plugins.dnsnode.*.timeout":         timeout,
		"plugins.dnsfilter1":                plugin("Kind dnsfilter1: a DNS filtering server, version 6 of its product line."),
		"plugins.dnsfilter1.*":              instance,
		"plugins.dnsfilter1.*.enabled":      enabled("Reads this server's query log."),
		"plugins.dnsfilter1.*.host":         host("Where its web server is."),
		"plugins.dnsfilter1.*.port":         port("Web server port.", "80, or 443 with ssl"),
		"plugins.dnsfilter1.*.password":     {doc: "Empty reads a server with no password set.", allowed: "an app password"},
		"plugins.dnsfilter1.*.ssl":          ssl("Uses HTTPS."),
		"plugins.dnsfilter1.*.insecure":     {doc: "Skips certificate checks.", allowed: "true, false"},
		"plugins.dnsfilter1.*.timeout":      timeout,
		"plugins.dnsfilter2":                plugin("Kind dnsfilter2: a second DNS filtering server."),
		"plugins.dnsfilter2.*":              instance,
		"plugins.dnsfilter2.*.enabled":      enabled("Reads this server's query log."),
		"plugins.dnsfilter2.*.host":         host("Where its web interface is."),
		"plugins.dnsfilter2.*.port":         port("Web interface port.", "80, or 443 with ssl"),
		"plugins.dnsfilter2.*.user":         {doc: "Empty reads a server with no login set.", allowed: "the web interface login"},
		"plugins.dnsfilter2.*.password":     {doc: "The login's password.", allowed: "any"},
		"plugins.dnsfilter2.*.ssl":          ssl("Uses HTTPS."),
		"plugins.dnsfilter2.*.insecure":     {doc: "Skips certificate checks.", allowed: "true, false"},
		"plugins.dnsfilter2.*.timeout":      timeout,
		"notify":                            {doc: "Notification destinations. Each sits under notify with a name you choose as its key (lower-case letters, digits, - and _) and has exactly one service block: push, webhook or http. Which changes a destination receives is selected on the Notifications page of the web interface. Remove the leading \"# \" of an example to use it."},
		"notify.*":                          {doc: "A destination: its name is yours to choose."},
		"notify.*.enabled":                  {doc: "Sends to this destination; on unless false.", allowed: "true, false"},
		"notify.*.timeout":                  {doc: "Longest one send may take.", allowed: durationAllowed + ", above 0s"},
		"notify.*.push":                     {doc: "Block push: publishes to a topic URL of a push-notification server."},
		"notify.*.push.url":                 {doc: "Where messages are published.", def: "required, no default", allowed: "the topic URL (http or https)"},
		"notify.*.push.token":               {doc: "For a server that requires one.", allowed: "an access token"},
		"notify.*.push.priority":            {doc: "Message priority, 1 (min) to 5 (max). 0 leaves it to the server.", allowed: "0 to 5"},
		"notify.*.webhook":                  {doc: "Block webhook: a signed JSON POST."},
		"notify.*.webhook.url":              {doc: "Where the signed JSON POST goes.", def: "required, no default", allowed: "an HTTP or HTTPS URL"},
		"notify.*.webhook.secret":           {doc: "Keys the signature on each request. A secret that starts with whsec_ is base64 after that prefix.", def: "required, no default", allowed: "any"},
		"notify.*.http":                     {doc: "Block http: a request with your headers and a body built from a template."},
		"notify.*.http.url":                 {doc: "Where the request goes. It may contain the token of the target service. The service never logs or shows it.", def: "required, no default", allowed: "an HTTP or HTTPS URL"},
		"notify.*.http.headers":             {doc: "Sent with every request, such as Authorization. A Content-Type given here replaces application/json. From the environment: one variable per header, SVC_NOTIFY__<NAME>__HTTP__HEADERS__X_API_KEY sets X-Api-Key.", allowed: "header names and values"},
		"notify.*.http.body":                {doc: "The request body: a Go text/template over .Kind, .Summary, .Time, .Event and .Device, with the functions json, upper, lower and default.", def: "required, no default", allowed: "a text template in Go template syntax"},
	}
	maps.Copy(docs, sensorKeyDocs())
	return docs
}
