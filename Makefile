# The README's commands. `make demo` runs the main job on sample data;
# `make test` runs every check CI runs.
SHELL := /bin/bash
SCRATCH ?= $(CURDIR)/target/demo
JOURNAL_REMOTE = $(firstword $(wildcard /lib/systemd/systemd-journal-remote /usr/lib/systemd/systemd-journal-remote))
BIN := target/debug/kubelet-sentinel

.PHONY: deps build demo test lint clean release assets tools deb-tool rpm-tool deb rpm test-packages test-system test-fleet bench bench-deps bench-smoke bench-hosts

deps:
	@bash .ci/deps

build: deps
	cargo build --bins --examples

# Writes a sample journal (examples/sample_journal.rs through
# systemd-journal-remote) into $(SCRATCH), runs the service over it once with
# its store under $(SCRATCH), and shows what it recorded.
demo: build
	@rm -rf $(SCRATCH) && mkdir -p $(SCRATCH)/journal
	@target/debug/examples/sample_journal > $(SCRATCH)/sample.export
	@$(JOURNAL_REMOTE) --output=$(SCRATCH)/journal/sample.journal - < $(SCRATCH)/sample.export
	@# The sample journal is dated 2026-11-28: max_age is widened so its alerts are mailed.
	@printf '[journal]\ndirectory = "%s"\nstart_at = "all"\n[store]\npath = "%s"\n[api]\nsocket = "%s"\n[alert]\nto = ["oncall@example.com"]\ntransport = "file"\nmax_age = "3650d"\n[alert.file]\ndirectory = "%s"\n' \
		$(SCRATCH)/journal $(SCRATCH)/store $(SCRATCH)/query.sock $(SCRATCH)/mail > $(SCRATCH)/config.toml
	@mkdir -p $(SCRATCH)/mail
	@echo "== kubelet-sentinel run --once (the sample journal in $(SCRATCH)/journal)"
	@$(BIN) --config $(SCRATCH)/config.toml run --once
	@echo; echo "== kubelet-sentinel incidents"
	@$(BIN) --config $(SCRATCH)/config.toml incidents
	@echo; echo "== kubelet-sentinel nodes"
	@$(BIN) --config $(SCRATCH)/config.toml nodes
	@id=$$($(BIN) --config $(SCRATCH)/config.toml incidents --verdict startup-race --limit 1 2>/dev/null | awk 'NR==2 {print $$1}'); \
		echo; echo "== kubelet-sentinel show $$id"; $(BIN) --config $(SCRATCH)/config.toml show $$id
	@echo; echo "== Alert emails (file transport, $(SCRATCH)/mail):"
	@for f in $(SCRATCH)/mail/*.eml; do \
		echo "  $$(basename $$f): $$(awk '/^Subject:/ {s=$$0; while ((getline l) > 0 && l ~ /^[ \t]/) {sub(/^[ \t]+/, " ", l); s=s l}; print s; exit}' $$f)"; done

# The core alone first: built without the other packages' features (no
# chrono `clock`), with its own clippy.toml (src/pure/clippy.toml), so the
# compiler and clippy keep its wall.
lint:
	cargo fmt --all -- --check
	cargo clippy -p kubelet-sentinel-core --all-targets -- -D warnings
	cargo clippy --workspace --all-targets -- -D warnings

test: deps lint
	cargo test --workspace
	$(MAKE) --no-print-directory bench-smoke
	$(MAKE) --no-print-directory test-packages
	$(MAKE) --no-print-directory test-system
	$(MAKE) --no-print-directory test-fleet

# Packages: the release binary, the man page and completions generated from
# the CLI definition, the unit, the default config.
release: deps
	cargo build --release --locked
	@# A stripped copy is packaged: target/release/kubelet-sentinel may be
	@# running (a benchmark, a test service) and is left as built.
	strip -s -o target/release/kubelet-sentinel.stripped target/release/kubelet-sentinel

assets: build
	target/debug/examples/gen_assets target/assets

deb-tool:
	@command -v cargo-deb >/dev/null || cargo install --locked cargo-deb

rpm-tool:
	@command -v cargo-generate-rpm >/dev/null || cargo install --locked cargo-generate-rpm

tools: deb-tool rpm-tool

deb: deb-tool release assets
	@mkdir -p target/debian
	cargo deb --no-build --no-strip -o target/debian/

rpm: rpm-tool release assets
	cargo generate-rpm

# Package contents, the unit's checks, install/reinstall/purge of the .deb
# and an .rpm install into a scratch root (tests/packages.sh).
test-packages: deb rpm
	bash tests/packages.sh

# systemd as PID 1 in a container (debootstrap + systemd-nspawn; the Debian
# root is cached in /var/cache/kubelet-sentinel-test): install, run, query,
# restart, purge (tests/system.sh).
test-system: deb
	bash tests/system.sh $$(ls -t target/debian/kubelet-sentinel_*.deb | head -1)

# A fleet in containers: nodes uploading to a collector, a real Alertmanager
# on the host (tests/fleet.sh).
test-fleet: deb
	bash tests/fleet.sh $$(ls -t target/debian/kubelet-sentinel_*.deb | head -1)

clean:
	cargo clean

# Benchmarks (not part of `make test`; see BENCHMARKS.md): generated journals
# of 100k and 1M entries and a 50-host collector journal, against journalctl,
# grep, a bare libsystemd loop and fail2ban; alert latency; criterion.
bench-deps: deps

bench: bench-deps
	cargo build --release --locked --bins --examples
	bash benches/bench.sh

# A collector of 1 000 and 10 000 hosts, a journal file each (HOSTS,
# PER_HOST, WORK; see benches/hosts.sh): catch-up against journalctl, and
# memory and open files while following. Writes its section of BENCHMARKS.md.
bench-hosts: bench-deps
	cargo build --release --locked --bin kubelet-sentinel --example gen_journal
	bash benches/hosts.sh

# A bounded run of the generator and the benchmark table on a tiny journal
# (part of `make test`): the harness keeps working; the figures mean nothing.
bench-smoke: bench-deps
	cargo build --release --locked --bins --examples
	RUNS=1 SIZES=5000 COLLECTOR=5000 COLLECTOR_HOSTS=3 LATENCY_ROUNDS=5 IDLE_SECONDS=2 SERVICE_INCIDENTS=1000 NODES=500 NODES_RESOLVE=2 CRITERION=0 OUT=target/bench/smoke.md bash benches/bench.sh
