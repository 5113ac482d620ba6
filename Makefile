# lobbyd: the two commands a newcomer needs are `make run` and `make test`.
CARGO ?= cargo

.PHONY: run build test lint fmt bench soak clean

run:
	$(CARGO) run --release --bin lobbyd --

build:
	$(CARGO) build --release

test:
	$(CARGO) test --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# Benchmarks against the echo baseline (BENCH_DURATION=S per mode); loopback only.
bench:
	scripts/bench.sh

# Mixed load with vanishing clients, then leak checks (SOAK_SECONDS=S, default 60).
soak:
	scripts/soak.sh

clean:
	$(CARGO) clean
