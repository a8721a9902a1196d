// Package flowlistener is the flowlistener source kind: a UDP listener
// for a router's NetFlow v5/v9 and IPFIX exports
// (plugins.flowlistener.<instance>). This build owns its configuration
// (Config, Validate); the listener itself comes with the flows issue, and
// until then `jocasta list-sources` lists the kind as not run.
package flowlistener
