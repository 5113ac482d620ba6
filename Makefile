# lobbyd: the two commands a newcomer needs are `make run` and `make test`.
CARGO ?= cargo

.PHONY: run build test test-js test-browser lint fmt bench criterion soak hostile hostile-lobby cluster clean

# The status page and /metrics on loopback (METRICS=ADDR to move them); ARGS="..." passes more
# flags to lobbyd (`lobbyd --help`).
METRICS ?= 127.0.0.1:9100
ARGS ?=

# The lobby page of examples/web/ (when present) is served on the general lobby's WebSocket
# port: http://127.0.0.1:4244/
WEB := $(if $(wildcard examples/web/index.html),--lobby-web examples/web)

run:
	$(CARGO) run --release --bin lobbyd -- --metrics $(METRICS) $(WEB) $(ARGS)

build:
	$(CARGO) build --release

# Every crate of the workspace: unit tests, one integration-test binary per crate (tests/it/,
# lobby-load/tests/it/), doctests, the examples built, and clients/js. What `cargo test
# --workspace` runs, but the test executables side by side (scripts/test.sh: their tests
# mostly wait on sockets and timers; `scripts/test.sh FILTER` passes arguments to each).
# The criterion benches (`benches/`, a workspace of their own so that criterion is never
# compiled here) are linted by `make lint` and run by `make criterion`. Everything builds
# unoptimized but argon2 (`[profile.test]` in Cargo.toml).
test:
	CARGO="$(CARGO)" MAKE="$(MAKE)" scripts/test.sh

# The JavaScript client's unit tests (clients/js/: golden frames, the client on a scripted
# socket), Node's own runner, nothing to install; a loud skip line where node is missing.
test-js:
	@if command -v node >/dev/null 2>&1; then \
		node --test clients/js/*.test.js; \
	else \
		echo "*** SKIPPED clients/js tests: node not found (Debian: apt-get install nodejs) ***"; \
	fi

# The lobby page (examples/web) in Debian's chromium, and clients/js/lobby.js in Node, against
# a lobbyd built here (tests/browser/: playwright-core pinned by its package-lock.json;
# CHROMIUM=PATH moves the browser); screenshots in target/browser/. Node 20 has a global
# WebSocket only behind a flag, given when needed (without one, the Node test says it skips).
HAS_WEBSOCKET = -e "process.exit(typeof WebSocket === 'function' ? 0 : 1)"
NODE_WEBSOCKET = $(shell node $(HAS_WEBSOCKET) 2>/dev/null || { node --experimental-websocket $(HAS_WEBSOCKET) 2>/dev/null && echo --experimental-websocket; })
test-browser:
	$(CARGO) build --bin lobbyd
	cd tests/browser && npm ci --no-audit --no-fund
	cd tests/browser && LOBBYD_BIN=$(CURDIR)/target/debug/lobbyd \
		node $(NODE_WEBSOCKET) --test lobby-page.test.js lobbyd-client.test.js

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	cd benches && $(CARGO) fmt --all -- --check
	cd benches && $(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
	cd benches && $(CARGO) fmt --all

# Benchmarks against the echo baseline (BENCH_DURATION=S per mode); loopback only.
bench:
	scripts/bench.sh

# The criterion benches of the parsers, emitters and the R-Type core's hot paths (`benches/`);
# BENCH=NAME runs one group (e.g. BENCH=wz_v4).
BENCH ?=
criterion:
	cd benches && $(CARGO) bench -- $(BENCH)

# Every front end under mixed load with vanishing and killed clients, then ghost and leak
# checks (SOAK_SECONDS=S, default 60; SOAK_WARMUP=S).
soak:
	scripts/soak.sh

# Hostile traffic against every front end, judged by a well-behaved client (HOSTILE_SECONDS=S).
hostile:
	scripts/hostile.sh

# Each attack on the general lobby (password guessing, a chat crowd, non-readers, mass
# departure, unfinished frames, game hoarding, a metrics connect flood, descriptor
# exhaustion) against its own lobbyd, each judged against its target; loopback only.
hostile-lobby:
	scripts/hostile-lobby.sh

# A private Redis and three nodes sharing UDP/TCP 4242 with --reuse-port (status pages on
# 127.0.0.1:9101-9103), for trying a group of nodes; Ctrl-C stops them. Needs redis-server.
cluster:
	scripts/cluster.sh

clean:
	$(CARGO) clean
