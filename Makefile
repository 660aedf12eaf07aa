# Gleaner — make targets. `make test` is what CI runs (.ci/run).
GO       ?= go
PKGS     ?= ./...
DATA     ?= ../shared/data
FUZZTIME ?= 30s

.PHONY: all build test vet fmt-check unit fuzz bench bench-go jpa-eval clean

all: build

build:
	$(GO) build -o bin/gleaner ./cmd/gleaner

## test: formatting, vet, then every test (unit, property, seeded, fuzz seed corpora).
test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

## fuzz: run each fuzz target for FUZZTIME (the committed corpora run in `make test`).
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecodeProblem -fuzztime=$(FUZZTIME) ./allocator
	$(GO) test -run='^$$' -fuzz=FuzzIngest -fuzztime=$(FUZZTIME) ./jpa
	$(GO) test -run='^$$' -fuzz=FuzzReadScaling -fuzztime=$(FUZZTIME) ./internal/dataset

## bench: the allocator benchmark on real curves (see docs/benchmarks.md).
bench:
	$(GO) run ./cmd/gleaner bench allocator --data $(DATA)

bench-go:
	$(GO) test -run='^$$' -bench=. -benchmem ./allocator

jpa-eval:
	$(GO) run ./cmd/gleaner jpa eval --dir $(DATA)/scaling

clean:
	rm -rf bin
