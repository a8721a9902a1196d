// Package config loads, checks and renders jocasta's configuration: every
// key of the service contract, from a YAML file and SVC_ environment
// variables.
//
// # Overview
//
// [Find] picks the file, [Load] reads it, [Config.YAML] renders it for
// `jocasta config show`, [Starter] writes the commented file of
// `jocasta init` (config.example.yaml at the repository root is its output
// for 192.168.1.0/24, and a test keeps it so).
//
// The Config struct is the schema. Its yaml tags are the keys; unknown-key
// detection, the environment mapping, the starter file, `config show` and
// the tests all walk the same struct (schema.go), and keys.go documents each
// key (a test checks that the two agree), so a key cannot drift between
// them.
//
// The loader composes types other packages own: each plugin kind's
// instance type is sources/<kind>.Config (with SetDefaults, its endpoint
// through Endpoint(), and, where it has rules of its own, a Validate whose
// errors name a key relative to the instance: see loader.owned), and each
// notification block is its channel's Config (projections/notify/push,
// webhook, httpnotify). Their time.Duration fields read and write as
// Durations. The rules every HTTP(S) endpoint shares (host, port and its
// default, timeout, plain-text credentials) are checked here, where a key's
// position and whether it was set are known.
//
// # Lookup order
//
// --config FILE, else $SVC_CONFIG, else ./jocasta.yaml, else
// /etc/jocasta/config.yaml. With none, the defaults and SVC_ variables
// apply. A file named by --config or SVC_CONFIG must exist.
//
// # Loading and problems
//
// Load starts from [Defaults], decodes the file, applies the environment,
// then checks the values. It walks goccy/go-yaml's AST against the schema
// rather than using the library's strict decoder, because the strict decoder
// stops at the first problem: here every problem is collected, each with
// file:line:column (the value's position, or the key's for a missing key)
// and a message that says what to change. Unknown keys suggest the closest
// key ("did you mean") or the section a key belongs to. Problems from the
// environment name the variable instead of a position. Secret values are
// never quoted in messages.
//
// YAML details: anchors, aliases and merge keys (<<) work; top-level keys
// starting with "x-" are ignored, to hold anchors; only one document is
// allowed; tags other than the core ones (!!str ...) are refused.
// Booleans are true or false (yes/no/on/off are refused with a hint). Text
// keys take any scalar as written (password: 0123 is "0123"). Whole numbers
// must not be quoted. An empty section ("server:") keeps its defaults; an
// empty list key is an empty list.
//
// # Environment
//
// A variable is SVC_ and the key path in capitals, with "__" between
// levels; a single "_" stays part of a key:
//
//	scan.devices.resolve_mdns          SVC_SCAN__DEVICES__RESOLVE_MDNS=false
//	plugins.routerapi.core.password    SVC_PLUGINS__ROUTERAPI__CORE__PASSWORD=secret
//	notify.phone.push.url              SVC_NOTIFY__PHONE__PUSH__URL=https://ntfy.sh/x
//	networks                           SVC_NETWORKS=10.0.0.0/24,10.0.1.0/24
//	notify.chat.http.headers (a map)   SVC_NOTIFY__CHAT__HTTP__HEADERS__X_API_KEY=k
//
// The plugin instance or destination name is one level and is lower-cased
// (so names are lower-case in the file too). A variable can create an
// instance or destination the file does not have. Lists are comma-separated
// (spaces around items ignored, "" is an empty list). A header is one
// variable per header; its name has "_" turned into "-" and is put in
// canonical form (X_API_KEY sets X-Api-Key, replacing a header of the file
// whose name differs only in case). Values follow the YAML rules
// (booleans true/false, whole numbers in decimal, durations as below).
// Variables win over the file. An SVC_ variable that names no key is a
// problem, except SVC_CONFIG.
//
// # Choices the contract leaves open
//
//   - Durations: a whole number and one unit, ^[0-9]{1,9}[smh]$ ([Duration]);
//     the error suggests the accepted form ("1h30m" → "90m"). Intervals,
//     timeouts, session lifetime, idle timeout and inventory.online_window
//     must be above 0s; retention, inventory.address_grace and
//     scan.devices.wait may be 0s.
//   - Whole numbers: scan.devices.rate 1 to 1000000, scan.devices.rounds 1
//     to 100, scan.ports.concurrency 1 to 65535.
//   - networks: CIDR prefixes written as networks. "10.0.0.1/24" is refused
//     with the hint "write the network 10.0.0.0/24" (it is ambiguous between
//     the network and the single address); a bare address too. A prefix may
//     hold at most 2^24 addresses (an IPv6 /64 cannot be swept), and
//     prefixes may not overlap (each address belongs to one network).
//     server.trusted_proxies takes bare addresses (as /32 or /128).
//   - Names of plugin instances and notify destinations: lower-case letters,
//     digits, '-' and '_', at most 63, starting and ending with a letter or
//     digit, no "__" (they must survive the variable names).
//   - Plugins: host is required, and exporters non-empty, only for enabled
//     instances; other values are checked for all. An unset port becomes 80
//     or 443 with ssl (dnsnode: 5380 or 53443) after Load.
//   - Notify: an enabled destination needs exactly one block and that
//     block's required keys; a disabled one may have none, never two.
//     A webhook secret starting with whsec_ must be base64 after the prefix.
//     http.body must parse with [BodyTemplate] (functions json, upper,
//     lower, default); a parse error gives the template's line and column
//     and, for a block literal (|), the exact file line.
//   - logger.level and logger.format: other values are not errors (the
//     contract says they log at info / as JSON); Load stores the effective
//     value and adds a line to Config.Warnings for the caller to log.
//   - location.country is upper-cased; location.timezone must be known to
//     time.LoadLocation (time/tzdata is embedded, so the check does not
//     depend on the host).
//   - Secrets ([Config.Redacted]): plugin passwords and tokens, push token,
//     webhook secret, the whole http url, every http header value; in push
//     and webhook URLs the user-info password and the query. Config.YAML
//     always renders the redacted copy.
//
// # Concurrency
//
// The package keeps no state; every function may be called concurrently.
// A *Config is a plain value: do not change it while others read it.
package config
