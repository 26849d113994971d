# framefs build, test and benchmark entry points. See README.md.

GO       ?= go
BIN      := bin/framefs
FUZZTIME ?= 1m
GOFILES   = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*')

.PHONY: all deps build run test vet fmt-check unit e2e versitygw bench fuzz soak soak-write fixtures golden clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/framefs

# Demonstrates the furthest working path on the project's own demo videos.
run: build
	@scripts/demo.sh $(BIN)

test: deps vet fmt-check unit e2e

vet:
	$(GO) vet ./...

fmt-check:
	@unformatted=$$(gofmt -l $(GOFILES)); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# Tests mount real FUSE filesystems under the temp directory; whatever a
# crashed test left mounted is detached afterwards, pass or fail.
unit:
	@status=0; $(GO) test -race -count=1 -timeout 12m ./... || status=$$?; \
	scripts/unmount-stale.sh; exit $$status

e2e: build
	scripts/e2e-probe.sh $(BIN)
	scripts/e2e-table.sh $(BIN)
	scripts/e2e-s3.sh $(BIN)
	scripts/e2e-views.sh $(BIN)

# versitygw, the S3-compatible server the S3 tests start (built once into
# .cache/bin).
versitygw:
	scripts/versitygw.sh build

# Side-by-side benchmarks: prints NAME VALUE UNIT lines and writes
# bench-results.json.
bench: build
	scripts/bench.sh $(BIN)

# Coverage-guided fuzzing of every parser of untrusted bytes, FUZZTIME each.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReadMP4$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./videoidx
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./videoidx
	$(GO) test -run '^$$' -fuzz '^FuzzScanIndex$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./decoder
	$(GO) test -run '^$$' -fuzz '^FuzzParseSidecar$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./table
	$(GO) test -run '^$$' -fuzz '^FuzzEntry$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./cache/diskcache
	$(GO) test -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./table/filter
	$(GO) test -run '^$$' -fuzz '^FuzzChunkIndex$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./table

# 16 readers of random frames through a real mount for 60 s.
soak:
	@status=0; FRAMEFS_SOAK=60s $(GO) test -count=1 -run 'TestConcurrentReaders' -v ./fusefs || status=$$?; \
	scripts/unmount-stale.sh; exit $$status

# The write directories of a real `framefs mount` under a mix of drag-ins,
# multi-process writers, deletes, expire, gc and 8 readers, for
# SOAK_WRITE_TIME (10 minutes); prints its figures.
SOAK_WRITE_TIME ?= 10m
soak-write: build
	@status=0; FRAMEFS_SOAK_WRITE=$(SOAK_WRITE_TIME) FRAMEFS_BIN=$(abspath $(BIN)) \
	$(GO) test -count=1 -timeout 60m -run 'TestSoakWriteDirectories' -v ./fusefs || status=$$?; \
	scripts/unmount-stale.sh; exit $$status

# Regenerates the committed test videos and FFmpeg's golden reports on them.
fixtures:
	scripts/make-fixtures.sh
golden:
	scripts/make-golden.sh

clean:
	rm -rf bin bench-results.json
