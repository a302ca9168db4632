# pgmcc: the two commands a newcomer needs are `make demo` and `make test`.
# Both install what they need first (scripts/install-deps; cargo fetches crates).

CARGO ?= cargo
FUZZ_SECONDS ?= 60

PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: help deps demo test install install-files package uninstall fmt-check clippy unit fuzz vectors bench bench-sim reproduce grid fairness emulate interop interop-matrix clean

help:
	@echo "make demo    build and run the demo (no root, no real network needed)"
	@echo "make test    everything CI checks: rustfmt, clippy -D warnings, all tests"
	@echo "make fuzz    run every cargo-fuzz target (parser, sender and receiver cores) for FUZZ_SECONDS (default $(FUZZ_SECONDS)) each"
	@echo "make bench   (root) core cost + loopback throughput: ours vs OpenPGM vs a UDP ceiling, one table"
	@echo "make bench-sim  simulator speed and memory (Fig. 7 setup, 100 and 10,000 receivers); repairs per packet at 100 and 1000 receivers, selective and FEC parity"
	@echo "make reproduce  rerun the papers' experiments (5 seeds each) -> docs/reproduction.md, out/reproduce/report.html"
	@echo "make grid    the fairness grid (3 seeds): pgmcc vs TCP on 54 dumbbells -> its section of docs/reproduction.md"
	@echo "make fairness  generated scenarios (FAIRNESS_COUNT, default $(FAIRNESS_COUNT), 3 seeds), pgmcc vs a TCP flow in its place -> docs/fairness.md"
	@echo "make emulate (root, about an hour) real stacks in emulated networks: the peer table and the paper's figures -> docs/emulation.md"
	@echo "make vectors regenerate the golden vectors in crates/pgm-wire/tests/vectors"
	@echo "make interop build interop/pgm-send and pgm-recv (libpgm); as root: scripts/interop-libpgm-selftest"
	@echo "make interop-matrix (root) the OpenPGM and ZeroMQ interop tests -> the matrix in docs/interop.md"
	@echo "make install  build and install pgmcc, its man pages, bash/zsh/fish completions and the pgmcc-recv@ systemd unit under DESTDIR PREFIX (default /usr/local); make uninstall removes them"
	@echo "make package  the Debian package of the same files (dpkg-deb) -> target/debian/pgmcc_VERSION_ARCH.deb; install with apt install ./target/debian/pgmcc_*.deb"

# The man pages and completions are generated from the command line's own definitions
# (`pgmcc generate`), never written by hand. `install-files` lays out an already built BIN
# (make package and its test use it).
BIN ?= target/release/pgmcc
GEN ?= target/generated
install:
	$(CARGO) build --release --locked -p pgmcc-cli
	$(MAKE) --no-print-directory install-files BIN=target/release/pgmcc

install-files:
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/pgmcc
	rm -rf $(GEN)
	$(BIN) generate man $(GEN)/man
	$(BIN) generate completions $(GEN)/completions
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(GEN)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -D -m 0644 $(GEN)/completions/pgmcc.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pgmcc
	install -D -m 0644 $(GEN)/completions/_pgmcc $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_pgmcc
	install -D -m 0644 $(GEN)/completions/pgmcc.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/pgmcc.fish
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's#@BINDIR@#$(PREFIX)/bin#' contrib/systemd/pgmcc-recv@.service.in > $(DESTDIR)$(PREFIX)/lib/systemd/system/pgmcc-recv@.service

# A Debian package of what `make install PREFIX=/usr` installs, in target/debian.
package:
	$(CARGO) build --release --locked -p pgmcc-cli
	scripts/package --bin target/release/pgmcc target/debian

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/pgmcc $(DESTDIR)$(PREFIX)/share/man/man1/pgmcc.1 $(DESTDIR)$(PREFIX)/share/man/man1/pgmcc-*.1
	rm -f $(DESTDIR)$(PREFIX)/share/bash-completion/completions/pgmcc $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_pgmcc $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/pgmcc.fish
	rm -f $(DESTDIR)$(PREFIX)/lib/systemd/system/pgmcc-recv@.service

deps:
	@scripts/install-deps
	@$(CARGO) fetch --locked

demo: deps
	$(CARGO) build --release --locked -p pgmcc-cli
	@scripts/demo

test: deps fmt-check clippy unit

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

unit:
	@scripts/test-summary

fuzz: deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz

vectors:
	python3 scripts/pgm-vector.py

reproduce: deps
	$(CARGO) build --release --locked -p pgmcc-cli
	./target/release/pgmcc reproduce --seeds 5

# Not a test (about an hour on 2 cores): issue 19's fairness grid and receiver sweep; rewrites only their sections
# of docs/reproduction.md, which `make reproduce` keeps.
grid: deps
	$(CARGO) build --release --locked -p pgmcc-cli
	./target/release/pgmcc grid --seeds 3
	./target/release/pgmcc grid --seeds 3 --tcp sack,newreno --receivers 1,10,100,1000

# Not a test: the generated fairness yardstick (issue 51) on the report range of generator
# seeds, each scenario run with pgmcc and with a TCP flow in its place; GNU parallel runs the
# job file on every core (docs/fairness.md says how to spread it over machines).
FAIRNESS_COUNT ?= 200
FAIRNESS_OUT ?= out/fairness
fairness: deps
	$(CARGO) build --release --locked -p pgmcc-cli
	rm -rf $(FAIRNESS_OUT)
	./target/release/pgmcc fairness plan --count $(FAIRNESS_COUNT) --out $(FAIRNESS_OUT)
	parallel -j $$(nproc) --joblog $(FAIRNESS_OUT)/joblog.txt $$([ -t 2 ] && echo --bar) < $(FAIRNESS_OUT)/jobs.txt
	./target/release/pgmcc fairness report $(FAIRNESS_OUT) --doc docs/fairness.md

# Not a test (root, about an hour): issue 23's emulated results. `pgmcc emu` runs each
# scenario's flows as real programs (ours, Linux TCP, uftp, NORM, OpenPGM) in network
# namespaces; rewrites the peer and figure tables of docs/emulation.md.
emulate: deps
	$(CARGO) build --release --locked -p pgmcc-cli
	$(MAKE) -s -C interop
	scripts/emulate
	$(CARGO) test --locked -p pgmcc-cli --test emu -- --ignored

# Not a test: criterion core costs and loopback throughput against OpenPGM and a plain UDP
# blaster, measured in one run (scripts/bench; root for the network namespace).
bench: deps
	$(MAKE) -s -C interop
	scripts/bench

# Not a test: prints simulated-vs-wall speed and peak memory (targets in issue 6:
# Fig. 7 at 100 receivers faster than 60x real time; 10,000 receivers under 4 GiB), and how
# loss recovery scales (issue 20: repairs per packet against their lower bound, NAK
# suppression; docs/core.md "NAK timers"). The reliable 10,000-receiver case takes about
# 17 minutes on 2 cores.
bench-sim: deps
	$(CARGO) build --release --locked -p netsim --example bench_sim
	./target/release/examples/bench_sim 100 600
	./target/release/examples/bench_sim 10000 600 unreliable
	$(CARGO) build --release --locked -p netsim --example repair_scale
	./target/release/examples/repair_scale independent 100 300
	./target/release/examples/repair_scale independent 100 300 --fec 64
	./target/release/examples/repair_scale independent 1000 300
	./target/release/examples/repair_scale independent 1000 300 --fec 64
	./target/release/examples/repair_scale independent 10000 300
	./target/release/examples/repair_scale shared 100 300 100 500

interop: deps
	$(MAKE) -C interop

# Root: the interop tests (also part of `make test`), then docs/interop.md's matrix from what
# they measured (scripts/interop-matrix).
interop-matrix: deps
	$(MAKE) -s -C interop
	$(CARGO) test --locked -p pgmcc-cli --test interop
	scripts/interop-matrix --write

clean:
	$(CARGO) clean
