// Package routerapi is the routerapi source kind: a router, switch or access point read over its REST API (plugins.routerapi.<instance>). This build
// owns its configuration (Config); the reader itself (RouterOS REST, see
// ../shared/reference/routerapi.md) comes with its plugin issue, and until
// then `jocasta list-sources` lists the kind as not run.
package routerapi
