# The README's commands. `make demo` runs the main job on sample data;
# `make test` runs every check CI runs.
SHELL := /bin/bash
SCRATCH ?= $(CURDIR)/target/demo
JOURNAL_REMOTE := $(firstword $(wildcard /lib/systemd/systemd-journal-remote /usr/lib/systemd/systemd-journal-remote))
BIN := target/debug/kubelet-sentinel

.PHONY: deps build demo test lint clean

deps:
	@bash .ci/deps

build: deps
	cargo build --bins --examples

# Writes a sample journal (examples/sample_journal.rs through
# systemd-journal-remote) into $(SCRATCH), runs the service over it once with
# its store under $(SCRATCH), and shows what it recorded.
demo: build
	@rm -rf $(SCRATCH) && mkdir -p $(SCRATCH)/journal
	target/debug/examples/sample_journal > $(SCRATCH)/sample.export
	$(JOURNAL_REMOTE) --output=$(SCRATCH)/journal/sample.journal - < $(SCRATCH)/sample.export
	@# The sample journal is dated 2026-11-28: max_age is widened so its alerts are mailed.
	@printf '[journal]\ndirectory = "%s"\nstart_at = "all"\n[store]\npath = "%s"\n[api]\nsocket = "%s"\n[alert]\nto = ["oncall@example.com"]\ntransport = "file"\nmax_age = "3650d"\n[alert.file]\ndirectory = "%s"\n' \
		$(SCRATCH)/journal $(SCRATCH)/store $(SCRATCH)/query.sock $(SCRATCH)/mail > $(SCRATCH)/config.toml
	@mkdir -p $(SCRATCH)/mail
	$(BIN) --config $(SCRATCH)/config.toml run --once
	$(BIN) --config $(SCRATCH)/config.toml incidents
	$(BIN) --config $(SCRATCH)/config.toml nodes
	$(BIN) --config $(SCRATCH)/config.toml show $$($(BIN) --config $(SCRATCH)/config.toml incidents --verdict startup-race --limit 1 | awk 'NR==2 {print $$1}')
	@echo; echo "Alert emails (file transport):"; for f in $(SCRATCH)/mail/*.eml; do echo "  $$f: $$(grep -m1 '^Subject:' $$f)"; done

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings

test: deps lint
	cargo test

clean:
	cargo clean
