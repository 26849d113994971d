# framefs build, test and benchmark entry points. See README.md.

SHELL    := /bin/bash
GO       ?= go
BIN      := bin/framefs
FUZZTIME ?= 1m
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')

.PHONY: all deps build run test vet fmt-check lint staticcheck unit memory nocgo testreport e2e versitygw test-server bench fuzz soak soak-write soak-follow soak-short fixtures golden frozen-table clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/framefs

# Demonstrates the furthest working path on the project's own demo videos.
run: build
	@scripts/demo.sh $(BIN)

# Every skipped test (Go tests and end-to-end scripts) is recorded in
# FRAMEFS_SKIP_LOG; `make test` ends with one line per reason and its count.
# FRAMEFS_REQUIRE_FUSE=1, FRAMEFS_REQUIRE_S3=1, FRAMEFS_REQUIRE_TORCHVISION=1
# and FRAMEFS_REQUIRE_ROOT=1 (all set by CI) turn those skips into failures.
export FRAMEFS_SKIP_LOG := $(CURDIR)/.cache/test-skips.txt
TESTREPORT := .cache/bin/testreport

test: deps test-server vet fmt-check lint testreport
	@rm -f "$$FRAMEFS_SKIP_LOG"; status=0; \
	$(MAKE) --no-print-directory unit memory nocgo e2e soak-short || status=$$?; \
	$(TESTREPORT) -summary "$$FRAMEFS_SKIP_LOG"; exit $$status

vet:
	$(GO) vet ./...

fmt-check:
	@unformatted=$$(gofmt -l $(GOFILES)); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# shellcheck (Debian's, from make deps) on every script, following what
# they source (scripts/.shellcheckrc); staticcheck on every package. A
# finding that is wrong is silenced where it is, with the reason: a
# `# shellcheck disable=` or `//lint:ignore` comment.
SHELL_SCRIPTS = $(shell git ls-files 'scripts/*.sh' 2>/dev/null || ls scripts/*.sh) scripts/mount.framefs .ci/run
lint: deps staticcheck
	shellcheck -x $(SHELL_SCRIPTS)
	$(STATICCHECK) ./...

# staticcheck, built once into .cache/bin at the pinned version (rebuilt
# when the version changes).
STATICCHECK_VERSION := v0.8.2
STATICCHECK := .cache/bin/staticcheck
staticcheck:
	@if [ ! -x $(STATICCHECK) ] || [ "$$(cat $(STATICCHECK).version 2>/dev/null)" != $(STATICCHECK_VERSION) ]; then \
		echo "building staticcheck $(STATICCHECK_VERSION) (once)" >&2; \
		mkdir -p .cache/bin && GOBIN=$(CURDIR)/.cache/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) && \
		echo $(STATICCHECK_VERSION) >$(STATICCHECK).version; \
	fi

# Tests mount real FUSE filesystems under the temp directory, which
# scripts/with-test-tmp.sh makes private to the run: whatever a crashed test
# left mounted there is detached afterwards, pass or fail, and nobody
# else's mounts are touched. The report is plain `go test`'s, made from
# -json so that skips are counted. $(call gotest,FLAGS,PACKAGES).
gotest = scripts/with-test-tmp.sh bash -o pipefail -c \
	'$(GO) test $(1) -json $(2) | $(TESTREPORT) -skips "$$FRAMEFS_SKIP_LOG"'
unit: testreport
	@$(call gotest,-race -count=1 -timeout 12m -skip $(HEAP_TESTS),./...)

# Tests that measure what the mount keeps on the Go heap run apart,
# without the race detector: it does not change what they measure, but it
# makes them ten times slower (TestBytesPerFollowedEpisode: 185 s against
# 17 s on 2 cores, half of its package's race run).
HEAP_TESTS := ^TestBytesPerFollowedEpisode$$
memory: testreport
	@$(call gotest,-count=1 -timeout 5m -run $(HEAP_TESTS),./fusefs)

# The mount model and the in-process tests of the node tree build and pass
# without cgo (so without FFmpeg), as internal/layering promises.
nocgo:
	CGO_ENABLED=0 $(GO) test -count=1 ./mounttree/... ./fusefs/inprocess/...

testreport:
	@mkdir -p .cache/bin && $(GO) build -o $(TESTREPORT) ./internal/cmd/testreport

e2e: build
	scripts/test-lib.sh
	scripts/e2e-probe.sh $(BIN)
	scripts/e2e-table.sh $(BIN)
	scripts/e2e-s3.sh $(BIN)
	scripts/e2e-views.sh $(BIN)
	scripts/e2e-unmount-stale.sh $(BIN)

# versitygw, the S3-compatible server the S3 tests start (built once into
# .cache/bin).
versitygw:
	scripts/versitygw.sh build

# `make test` builds versitygw when it is missing; if that fails the S3
# tests say so when they skip (or fail, with FRAMEFS_REQUIRE_S3=1).
test-server:
	@scripts/versitygw.sh build >/dev/null || echo "make test: versitygw could not be built; the S3 tests will skip" >&2

# Side-by-side benchmarks: prints NAME VALUE UNIT lines and writes
# bench-results.json.
bench: build
	scripts/bench.sh $(BIN)

# Coverage-guided fuzzing of every parser of untrusted bytes, FUZZTIME each,
# and thousands of generated filters checked against DuckDB with a new seed.
# Every step runs even when one fails (a disagreement with DuckDB must not
# keep the parsers unfuzzed); the target fails if any did.
FUZZ_TARGETS = videoidx:FuzzReadMP4 videoidx:FuzzDecode videoidx:FuzzFastStart \
	decoder:FuzzScanIndex decoder:FuzzUnpack table:FuzzParseSidecar table:FuzzChunkIndex \
	cache/diskcache:FuzzEntry query/filter:FuzzCompile table/manifest:FuzzManifest \
	table/manifest:FuzzManifestList internal/timestamp:FuzzParse lerobot:FuzzInfo \
	lerobot:FuzzParquet lerobot:FuzzJSONLines

fuzz:
	@failed=""; \
	FRAMEFS_FILTER_SEED=$$(date +%s) FRAMEFS_FILTER_COUNT=3000 $(GO) test -count=1 -run '^TestRandomFiltersMatchDuckDB$$' -v ./query \
		|| failed="$$failed TestRandomFiltersMatchDuckDB"; \
	for t in $(FUZZ_TARGETS); do \
		echo "fuzz $$t"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./$${t%%:*} || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed"; exit 1; fi

# 16 readers of random frames through a real mount for 60 s.
soak:
	@FRAMEFS_SOAK=60s scripts/with-test-tmp.sh $(GO) test -count=1 -run 'TestConcurrentReaders' -v ./fusefs

# The write directories of a real `framefs mount` under a mix of drag-ins,
# multi-process writers, deletes, expire, gc and 8 readers, for
# SOAK_WRITE_TIME (10 minutes); prints its figures. SOAK_STORE=s3 puts the
# table on a local S3 server, with a second, read-only mount as another node.
SOAK_WRITE_TIME ?= 10m
SOAK_STORE ?= local
soak-write: build test-server
	@FRAMEFS_SOAK_WRITE=$(SOAK_WRITE_TIME) FRAMEFS_SOAK_STORE=$(SOAK_STORE) FRAMEFS_BIN=$(abspath $(BIN)) \
	scripts/with-test-tmp.sh $(GO) test -count=1 -timeout 60m -run 'TestSoakWriteDirectories' -v ./fusefs

# A read-only `framefs mount` following a table that takes a commit every
# 2 seconds, read by a lister of every episode folder of latest, for
# SOAK_FOLLOW_TIME (10 minutes); prints its memory against its targets.
SOAK_FOLLOW_TIME ?= 10m
soak-follow: build
	@FRAMEFS_SOAK_FOLLOW=$(SOAK_FOLLOW_TIME) FRAMEFS_BIN=$(abspath $(BIN)) \
	scripts/with-test-tmp.sh $(GO) test -count=1 -timeout 60m -run 'TestSoakFollower' -v ./fusefs

# make test's short runs of both soaks, side by side: 2 minutes each,
# checking the memory bound, the no-growth rule and the follower rule.
soak-short: build
	@FRAMEFS_SOAK_WRITE=2m FRAMEFS_SOAK_FOLLOW=2m FRAMEFS_BIN=$(abspath $(BIN)) \
	scripts/with-test-tmp.sh $(GO) test -count=1 -timeout 15m -run 'TestSoakWriteDirectories|TestSoakFollower' -v ./fusefs

# Regenerates the committed test videos and FFmpeg's golden reports on them.
fixtures:
	scripts/make-fixtures.sh
golden:
	scripts/make-golden.sh

# Writes testdata/format/vN, the frozen example table of the current table
# format version (FormatVersion in table/format.go). It refuses when that
# version has one: see testdata/format/README.md.
frozen-table:
	$(GO) test -count=1 -run '^$$' ./cmd/framefs -write-frozen-table

clean:
	rm -rf bin bench-results.json
