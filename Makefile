# Gleaner — make targets. `make test` is what CI runs (.ci/run).
GO       ?= go
PKGS     ?= ./...
DATA     ?= data
FUZZTIME ?= 30s
# The temporal CLI (Temporal dev server) the integration tests run against;
# `go install` puts it in GOBIN or the first GOPATH's bin.
TEMPORAL_CLI_VERSION ?= v1.5.1
GOBIN_DIR := $(or $(shell $(GO) env GOBIN 2>/dev/null),$(firstword $(subst :, ,$(shell $(GO) env GOPATH 2>/dev/null)))/bin)

.PHONY: all build test vet fmt-check check-surface unit integration temporal devserver demo fuzz bench bench-go jpa-eval clean compose-check ui-test

all: build

## build: the CLI in bin/gleaner (its commit stamped, whatever GOFLAGS say, for --version), and the Go example trainer where the
## example campaigns name it, relative to their spec files:
## examples/go-mlp/bin/go-mlp (command: [bin/go-mlp]).
build:
	$(GO) build -buildvcs=auto -o bin/gleaner ./cmd/gleaner
	$(GO) build -o examples/go-mlp/bin/go-mlp ./examples/go-mlp

## test: formatting, vet, then every test (unit, property, seeded, fuzz seed
## corpora, and the integration tests against a real Temporal dev server),
## then the short fault test on a live stack (chaos-short).
test: temporal fmt-check vet check-surface unit chaos-short

## temporal: install the pinned temporal CLI unless one is found (TEMPORAL_CLI,
## PATH, GOBIN/GOPATH bin — where internal/devserver looks). Takes minutes once.
temporal:
	@if [ -n "$$TEMPORAL_CLI" ] && [ -x "$$TEMPORAL_CLI" ]; then echo "temporal CLI: $$TEMPORAL_CLI"; \
	elif command -v temporal >/dev/null 2>&1; then echo "temporal CLI: $$(command -v temporal)"; \
	elif [ -x "$(GOBIN_DIR)/temporal" ]; then echo "temporal CLI: $(GOBIN_DIR)/temporal"; \
	else echo "installing the temporal CLI $(TEMPORAL_CLI_VERSION) into $(GOBIN_DIR) (go install, a few minutes)"; \
	  $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION); fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## check-surface: the public surface stays small and cgo-free. A program
## that submits campaigns imports the root package, hpo and client: the
## client (and the curve leaf and the JPA) build without cgo, and the
## client's imports include neither the workflows, the JPA, the allocator
## and its HiGHS solver, nor the embedded reference data.
SURFACE_FORBIDDEN := ^github.com/gleaner-hpc/gleaner/(workflows|jpa|allocator|data|internal/dataset)$$|gohighs
check-surface:
	CGO_ENABLED=0 $(GO) build ./client ./curve ./jpa
	@bad=$$($(GO) list -deps ./client | grep -E '$(SURFACE_FORBIDDEN)'); \
	if [ -n "$$bad" ]; then echo "go list -deps ./client lists packages the client must not import:"; echo "$$bad"; exit 1; fi

unit:
	$(GO) test -count=1 -timeout 30m $(PKGS)

## devserver: a local Temporal dev server for `gleaner worker`, with Gleaner's
## search attributes (workflows/searchattrs.go), its web UI on
## http://localhost:DEVSERVER_UI_PORT, and state kept across restarts in
## DEVSERVER_DB: the database `gleaner dev` (make demo) uses too, in Gleaner's
## state directory GLEANER_STATE ($XDG_STATE_HOME/gleaner, else
## ~/.local/state/gleaner; internal/cli/statedir.go has the same rule).
GLEANER_STATE ?= $(if $(filter /%,$(XDG_STATE_HOME)),$(XDG_STATE_HOME),$(HOME)/.local/state)/gleaner
DEVSERVER_DB ?= $(GLEANER_STATE)/dev/temporal.db
DEVSERVER_PORT ?= 7233
DEVSERVER_UI_PORT ?= 8233
GLEANER_SEARCH_ATTRIBUTES := GleanerCampaign=Keyword GleanerKind=Keyword GleanerStatus=Keyword \
	GleanerBestScore=Double GleanerHypervolume=Double GleanerTrialsDone=Int GleanerTrialsRunning=Int GleanerTrial=Keyword GleanerPool=Keyword
devserver: temporal
	@mkdir -p $(dir $(DEVSERVER_DB))
	@[ -e $(DEVSERVER_DB) ] || touch $(DEVSERVER_DB).one-partition
	$${TEMPORAL_CLI:-$$(command -v temporal || echo $(GOBIN_DIR)/temporal)} server start-dev \
	  --db-filename $(DEVSERVER_DB) --port $(DEVSERVER_PORT) --ui-port $(DEVSERVER_UI_PORT) \
	  --sqlite-pragma journal_mode=WAL --sqlite-pragma synchronous=NORMAL \
	  --dynamic-config-value system.enableActivityEagerExecution=true \
	  $$([ -e $(DEVSERVER_DB).one-partition ] && echo --dynamic-config-value matching.numTaskqueueReadPartitions=1 \
	    --dynamic-config-value matching.numTaskqueueWritePartitions=1) \
	  $(addprefix --search-attribute ,$(GLEANER_SEARCH_ATTRIBUTES))

## demo: the whole idea on this machine in one command (docs/demo.md): a
## Temporal dev server (web UI on http://localhost:8233, state in DEVSERVER_DB),
## a worker on a replayed Summit idle-node trace, and the example HPO campaign
## with live progress, its leaderboard and the UI queries. Ctrl-C stops it all.
## Flags go in DEMO_FLAGS, e.g. make demo DEMO_FLAGS="--exit-when-done --port 7300 --ui-port 8300 --dashboard-port 8301".
## (bin/gleaner rather than `go run`: go run exits 1 on Ctrl-C whatever the
## program does, and make would then report an error after a clean stop.)
demo: temporal build
	./bin/gleaner dev $(DEMO_FLAGS)

## integration: only the end-to-end tests (dev server, worker processes, trainers).
integration: temporal
	$(GO) test -count=1 -v ./internal/integration/...

## fuzz: run each fuzz target for FUZZTIME (the committed corpora run in `make test`).
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzDecodeProblem -fuzztime=$(FUZZTIME) ./allocator
	$(GO) test -run='^$$' -fuzz=FuzzIngest -fuzztime=$(FUZZTIME) ./jpa
	$(GO) test -run='^$$' -fuzz=FuzzParseKeys -fuzztime=$(FUZZTIME) ./codec
	$(GO) test -run='^$$' -fuzz=FuzzReadScaling -fuzztime=$(FUZZTIME) ./internal/dataset
	$(GO) test -run='^$$' -fuzz=FuzzReader -fuzztime=$(FUZZTIME) ./internal/swf
	$(GO) test -run='^$$' -fuzz=FuzzParseRequest -fuzztime=$(FUZZTIME) ./internal/searchproto
	$(GO) test -run='^$$' -fuzz=FuzzParseReport -fuzztime=$(FUZZTIME) ./trial
	$(GO) test -run='^$$' -fuzz=FuzzLoadRendezvous -fuzztime=$(FUZZTIME) ./trial
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeSpec$$' -fuzztime=$(FUZZTIME) .
	for f in FuzzReadIdleEvents FuzzReadSWF FuzzReadJobs; do \
		$(GO) test -run='^$$' -fuzz="^$$f\$$" -fuzztime=$(FUZZTIME) ./sim || exit 1; done
	$(GO) test -run='^$$' -fuzz='^FuzzReadSWF$$' -fuzztime=$(FUZZTIME) ./internal/slurmdemo
	$(GO) test -run='^$$' -fuzz=FuzzReplayParse -fuzztime=$(FUZZTIME) ./cluster
	$(GO) test -run='^$$' -fuzz=FuzzSpaceSample -fuzztime=$(FUZZTIME) ./hpo
	for f in FuzzParseJobs FuzzParsePlan FuzzParsePartitions FuzzParseConfig FuzzParseReservations FuzzParseJobID FuzzExpandHostlist FuzzParseDuration; do \
		$(GO) test -run='^$$' -fuzz=$$f -fuzztime=$(FUZZTIME) ./cluster/slurm || exit 1; done

## bench: the allocator benchmark on real curves (see docs/benchmarks.md).
bench:
	$(GO) run ./cmd/gleaner bench allocator --data $(DATA)

bench-go:
	$(GO) test -run='^$$' -bench=. -benchmem ./allocator

jpa-eval:
	$(GO) run ./cmd/gleaner jpa eval --dir $(DATA)/scaling

clean:
	rm -rf bin examples/go-mlp/bin

## compose-check: validate docker-compose.yml (no Docker engine needed; CI runs it).
compose-check:
	docker-compose -f docker-compose.yml config -q
	$(GO) test -count=1 -run 'Compose' ./internal/uitest

## ui-test: the Temporal web UI and Gleaner's dashboard in headless Chromium
## (Debian's chromium): a real campaign on a dev server, found by its search
## attribute, shows its summary; every view of the dashboard on the demo holds
## the demo's data. UI_SCREENSHOT=1 also refreshes docs/ui-*.png and
## docs/dashboard-*.png.
ui-test: temporal
	GLEANER_UI_SCREENSHOT=$(UI_SCREENSHOT) $(GO) test -count=1 -v -run 'TestTemporalUI|TestDashboard' ./internal/uitest

## netns-check: the network-namespace "hosts" of the multi-host tests
## (scripts/netns-hosts.sh, internal/nethosts). Needs root; fails, not skips,
## without network namespaces.
.PHONY: netns-check netns-clean
netns-check: temporal
	bash -n scripts/netns-hosts.sh
	GLEANER_REQUIRE_NETNS=1 $(GO) test -count=1 -v ./internal/nethosts/

## netns-clean: remove every host set internal/nethosts made that is still
## there (one marker per set in /run/gleaner-netns), also one a running test uses.
netns-clean:
	@for p in $$(ls /run/gleaner-netns 2>/dev/null); do echo "down $$p"; bash scripts/netns-hosts.sh down "$$p"; done

## slurm-up: a real Slurm cluster on this machine in SLURM_DIR — munged,
## slurmctld and GLEANER_SLURM_NODES (default 6) slurmd, partitions `batch`
## and preemptible `glean` (deploy/slurm-cluster.sh). Needs root and Debian's
## slurm-wlm and munge. Then: eval "$(deploy/slurm-cluster.sh env /tmp/gleaner-slurm)"
## slurm-down: stop it, kill what its jobs left behind, remove SLURM_DIR.
SLURM_DIR ?= /tmp/gleaner-slurm
.PHONY: slurm-up slurm-down
slurm-up:
	bash deploy/slurm-cluster.sh start $(SLURM_DIR)

slurm-down:
	bash deploy/slurm-cluster.sh stop $(SLURM_DIR)

## slurm-demo: the live BFTrainer scenario on a real Slurm cluster (docs/slurm-demo.md):
## a window of Theta's 2022 log replayed into Slurm as real batch jobs, its holes
## harvested by pilot jobs for an HPO campaign, measured against a pass without
## Gleaner. Needs root, slurm-wlm and munge. Flags go in SLURM_DEMO_FLAGS, e.g.
## make slurm-demo SLURM_DEMO_FLAGS="--baseline=false --jobs 60 --compression 2000".
.PHONY: slurm-demo
slurm-demo: temporal build
	$(GO) build -o bin/go-mlp ./examples/go-mlp
	./bin/gleaner slurm-demo $(SLURM_DEMO_FLAGS)

## stack: docker-compose.yml's stack on this machine without Docker
## (deploy/stack/stack.sh, docs/deploy.md "A live stack without Docker"):
## PostgreSQL 15 in bin/stack/postgres (port 55432), the schemas, the Temporal
## server built from its Go module at compose's version (frontend on
## 127.0.0.1:7233), the namespace and search attributes, the Temporal UI built
## from its Go module (http://127.0.0.1:8080), a worker and an agent (4 CPU
## slots); logs in bin/stack/logs. Idempotent.
## stack-stop: stop it, agent first (its trainers checkpoint); data kept.
## stack-status: what runs. Ports and paths: the GLEANER_STACK_* variables.
STACK_SH := deploy/stack/stack.sh
.PHONY: stack stack-stop stack-status stack-build chaos chaos-short
stack: temporal build
	$(GO) build -o bin/go-mlp ./examples/go-mlp
	bash $(STACK_SH) start

stack-stop:
	bash $(STACK_SH) stop

stack-status:
	bash $(STACK_SH) status

## stack-build: only build the Temporal server and temporal-sql-tool (once,
## minutes) into bin/stack/temporal-<version>, and the UI into bin/stack/ui-<version>.
stack-build: build
	bash $(STACK_SH) build

## chaos: the fault test (internal/chaos): a stack of its own on free ports,
## campaigns of checkpointing go-mlp trials, and CHAOS_FAULTS faults of each
## kind (SIGKILL of the worker, SIGKILL of the agent, Temporal server restart,
## PostgreSQL restart); asserts no trial lost or done twice and at most one
## checkpoint interval retrained, prints recovery times. chaos-short (2 of
## each) runs in `make test`.
CHAOS_FAULTS ?= 20
chaos: temporal build
	GLEANER_STACK_UI=0 bash $(STACK_SH) build
	GLEANER_CHAOS_FAULTS=$(CHAOS_FAULTS) $(GO) test -count=1 -v -timeout 120m -run '^TestChaos$$' ./internal/chaos

chaos-short: temporal build
	GLEANER_STACK_UI=0 bash $(STACK_SH) build
	GLEANER_CHAOS_FAULTS=2 $(GO) test -count=1 -timeout 30m -run '^TestChaos$$' ./internal/chaos
