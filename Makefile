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
# systemd-journal-remote) into $(SCRATCH) and reads it back.
demo: build
	@rm -rf $(SCRATCH) && mkdir -p $(SCRATCH)/journal
	target/debug/examples/sample_journal > $(SCRATCH)/sample.export
	$(JOURNAL_REMOTE) --output=$(SCRATCH)/journal/sample.journal - < $(SCRATCH)/sample.export
	$(BIN) scan $(SCRATCH)/journal
	$(BIN) scan --details $(SCRATCH)/journal | sed -n '/^incident /,/^$$/p' | head -20

lint:
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings

test: deps lint
	cargo test

clean:
	cargo clean
