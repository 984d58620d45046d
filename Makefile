# Lexicon's one build file. `make test` is the only test command; `make demo` is fleet in a box.
SHELL := /bin/bash
GO ?= go
BUILD := build
BIN := $(BUILD)/bin
# VERSION stamps the release and the agent it pins: the one version a node probes a staged agent for.
VERSION ?= $(shell cat VERSION)
AGENT_LDFLAGS := -X github.com/lexicon-fleet/lexicon/agent.Version=$(VERSION)
# The plane's binaries carry it too (plane.Version), so a replica names the release it was built as.
VERSION_LDFLAGS := $(AGENT_LDFLAGS) -X github.com/lexicon-fleet/lexicon/plane.Version=$(VERSION)
AGENT_PLATFORMS := linux/amd64 linux/arm64

# Every binary and module is built reproducibly: no build paths, no VCS stamp, so the same tree and
# toolchain give the same bytes, which `lexicon-release rebuild-check` checks against a release.
GO_REPRO := -trimpath -buildvcs=false

# Binaries are every main package under the owners' cmd/ folders; drivers are plugins/<kind>/<name>.
CMDS := $(wildcard registry/cmd/* agent/cmd/* plane/cmd/*)
DRIVERS := $(wildcard plugins/*/*/manifest.json)

.PHONY: all build wasm modules agents agent-size packages debian-root test bench demo release lint clean proto ui-shots depaware standard-verifiers openapi versitygw lighthouse

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build $(GO_REPRO) -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/ $(addprefix ./,$(CMDS))
	@for m in $(DRIVERS); do d=$$(dirname $$m); k=$$(basename $$(dirname $$d)); n=$$(basename $$d); \
	  echo "$(GO) build $(GO_REPRO) -o $(BIN)/lexicon-driver-$$k-$$n ./$$d"; $(GO) build $(GO_REPRO) -o $(BIN)/lexicon-driver-$$k-$$n ./$$d || exit 1; done
	$(GO) build $(GO_REPRO) -o $(BIN)/lexicon-driver-dns-memory ./examples/driver-memory

# wasm builds every word and recipe module: primitives/<name> -> build/wasm/<name>.wasm, the example word,
# and the host's test words. Each is built reproducibly (-trimpath, no VCS stamp) and its data segments
# merged by `lexicon-release wasmpost`, before anything hashes or signs it.
WASM_DIR := $(BUILD)/wasm
# Modules are rebuilt when datamerge (what changes their bytes) changes; the tool itself is only
# order-only, so editing another lexicon-release command does not rebuild every module.
WASMPOST_TOOL := $(BUILD)/tools/lexicon-release
WASMPOST := $(WASMPOST_TOOL) wasmpost
DATAMERGE := $(wildcard registry/cmd/lexicon-release/internal/datamerge/*.go)
WORDS := $(patsubst primitives/%/main.go,%,$(wildcard primitives/*/main.go))
TESTWORDS := $(patsubst host/wasm/testdata/%/main.go,%,$(wildcard host/wasm/testdata/*/main.go))
WASM_OUT := $(WORDS:%=$(WASM_DIR)/%.wasm) $(TESTWORDS:%=$(WASM_DIR)/testdata/%.wasm) $(WASM_DIR)/examples/hello.wasm \
	$(WASM_DIR)/examples/motd.wasm $(WASM_DIR)/examples/motd_write.wasm
# Recipes: primitives/recipes/<name> -> build/wasm/recipes/<name>.wasm (staged by `modules`), and the
# recipe loop's test modules agent/internal/recipes/testdata/<name> -> build/wasm/recipetest/<name>.wasm.
RECIPES := $(patsubst primitives/recipes/%/main.go,%,$(wildcard primitives/recipes/*/main.go))
RECIPETESTS := $(patsubst agent/internal/recipes/testdata/%/main.go,%,$(wildcard agent/internal/recipes/testdata/*/main.go))
WASM_OUT += $(RECIPES:%=$(WASM_DIR)/recipes/%.wasm) $(RECIPETESTS:%=$(WASM_DIR)/recipetest/%.wasm)
WORD_SDK := $(shell find sdk/word sdk/errcode sdk/credkey sdk/footprint -name '*.go' -not -name '*_test.go') sdk/footprint/footprint.schema.json
WASM_DEPS := $(WORD_SDK) $(DATAMERGE) | $(WASMPOST_TOOL)
WASM_BUILD = @mkdir -p $(dir $@) && GOOS=wasip1 GOARCH=wasm $(GO) build $(GO_REPRO) -o $@.raw ./$< && $(WASMPOST) --out $@ $@.raw && rm -f $@.raw

wasm: $(WASM_OUT)

$(WASMPOST_TOOL): $(DATAMERGE) $(wildcard registry/cmd/lexicon-release/*.go)
	@mkdir -p $(dir $@)
	$(GO) build -o $@ ./registry/cmd/lexicon-release

.SECONDEXPANSION:
$(WASM_DIR)/%.wasm: primitives/% $$(wildcard primitives/%/*.go) $$(wildcard primitives/%/*.service) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/testdata/%.wasm: host/wasm/testdata/% $$(wildcard host/wasm/testdata/%/*.go) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/examples/hello.wasm: examples/word-hello $(wildcard examples/word-hello/*.go) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/examples/motd.wasm: examples/recipe-motd $(wildcard examples/recipe-motd/*.go) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/examples/motd_write.wasm: examples/recipe-motd/repair $(wildcard examples/recipe-motd/repair/*.go) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/recipes/%.wasm: primitives/recipes/% $$(wildcard primitives/recipes/%/*.go) $(WASM_DEPS)
	$(WASM_BUILD)
$(WASM_DIR)/recipetest/%.wasm: agent/internal/recipes/testdata/% $$(wildcard agent/internal/recipes/testdata/%/*.go) $(WASM_DEPS)
	$(WASM_BUILD)

# modules stages every built module the way lexicon-release build reads them: one folder each, with
# its manifest.json and the file the manifest names.
modules: build wasm
	@rm -rf $(BUILD)/modules && mkdir -p $(BUILD)/modules
	@for m in $(wildcard primitives/*/manifest.json); do n=$$(basename $$(dirname $$m)); \
	  mkdir -p $(BUILD)/modules/word-$$n && cp $$m $(BUILD)/wasm/$$n.wasm $(BUILD)/modules/word-$$n/ || exit 1; done
	@for m in $(wildcard primitives/recipes/*/manifest.json); do n=$$(basename $$(dirname $$m)); \
	  mkdir -p $(BUILD)/modules/recipe-$$n && cp $$m $(BUILD)/wasm/recipes/$$n.wasm $(BUILD)/modules/recipe-$$n/ || exit 1; done
	@for m in $(DRIVERS); do d=$$(dirname $$m); k=$$(basename $$(dirname $$d)); n=$$(basename $$d); \
	  mkdir -p $(BUILD)/modules/driver-$$k-$$n && cp $$m $(BIN)/lexicon-driver-$$k-$$n $(BUILD)/modules/driver-$$k-$$n/ || exit 1; done
	@echo "staged $$(ls $(BUILD)/modules | wc -l) modules in $(BUILD)/modules"

# agents builds lexicon-agent for every platform a release pins, reproducibly and stamped with VERSION:
# build/agents/<os>-<arch>/lexicon-agent. CGO is off so a cross build is the same as a native one. The
# shipped agent leaves out the symbol table and DWARF (-s -w): panics and profiles name functions from
# the runtime's own tables, which stay; `make build` keeps both for debuggers (registry/RATIONALE.md,
# "What the agent links of Sigstore").
AGENT_SHIP_LDFLAGS := -s -w $(AGENT_LDFLAGS)
agents:
	@for p in $(AGENT_PLATFORMS); do o=$${p%/*}; a=$${p#*/}; mkdir -p $(BUILD)/agents/$$o-$$a; \
	  echo "GOOS=$$o GOARCH=$$a $(GO) build $(GO_REPRO) -ldflags '$(AGENT_SHIP_LDFLAGS)' -o $(BUILD)/agents/$$o-$$a/lexicon-agent ./agent/cmd/lexicon-agent"; \
	  CGO_ENABLED=0 GOOS=$$o GOARCH=$$a $(GO) build $(GO_REPRO) -ldflags '$(AGENT_SHIP_LDFLAGS)' -o $(BUILD)/agents/$$o-$$a/lexicon-agent ./agent/cmd/lexicon-agent || exit 1; done

# agent-size prints the linux/amd64 agent's size, as `agents` builds it, and how many packages it links
# (counted as agent/cmd/lexicon-agent/depaware.txt counts them: the standard library's internal and
# vendored packages left out), each against its goal (issue 29; registry/RATIONALE.md, "What the agent
# links of Sigstore"). `make bench` prints it; it needs no quiet machine.
AGENT_SIZE_GOAL_MIB := 20
AGENT_PACKAGES_GOAL := 350
agent-size: agents
	@bytes=$$(stat -c %s $(BUILD)/agents/linux-amd64/lexicon-agent) && \
	pkgs=$$(CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) list -deps ./agent/cmd/lexicon-agent | \
	  awk -F/ '{ std = ($$1 !~ /\./); hidden = (std && $$1 == "vendor"); for (i = 1; i <= NF; i++) if (std && $$i == "internal") hidden = 1; if (!hidden) n++ } END { print n }') && \
	awk -v b=$$bytes -v p=$$pkgs -v gs=$(AGENT_SIZE_GOAL_MIB) -v gp=$(AGENT_PACKAGES_GOAL) 'BEGIN { \
	  mib = b / 1048576; \
	  printf "agent binary (linux/amd64): %.1f MiB, goal <= %d MiB: %s\n", mib, gs, (mib <= gs ? "met" : "NOT MET"); \
	  printf "agent linked packages: %d, goal <= %d: %s\n", p, gp, (p <= gp ? "met" : "NOT MET") }'

# packages makes the Debian packages with `lexicon-package deb` (registry/cmd/lexicon-package, which says
# what each holds): build/packages/{lexicon-agent,lexicon-plane,lexicon-cli}_<VERSION>_<arch>.deb for
# every platform a release pins. The agent is the one `agents` built, the very bytes the release pins;
# the plane and the CLI are cross-built beside it the same way (CGO off) into build/planes/<os>-<arch>.
# Files and changelog are stamped with the last commit's time (or SOURCE_DATE_EPOCH), so the same tree
# makes the same packages.
PACKAGE_TOOL := $(BUILD)/tools/lexicon-package
PACKAGE_DATE ?= $(or $(SOURCE_DATE_EPOCH),$(shell git log -1 --format=%ct 2>/dev/null))
packages: agents
	@mkdir -p $(dir $(PACKAGE_TOOL)) $(BUILD)/packages
	$(GO) build -o $(PACKAGE_TOOL) ./registry/cmd/lexicon-package
	@for p in $(AGENT_PLATFORMS); do o=$${p%/*}; a=$${p#*/}; d=$(BUILD)/planes/$$o-$$a; mkdir -p $$d; \
	  echo "GOOS=$$o GOARCH=$$a $(GO) build $(GO_REPRO) -ldflags '$(VERSION_LDFLAGS)' -o $$d/ ./plane/cmd/lexicon-plane ./plane/cmd/lexicon"; \
	  CGO_ENABLED=0 GOOS=$$o GOARCH=$$a $(GO) build $(GO_REPRO) -ldflags '$(VERSION_LDFLAGS)' -o $$d/ ./plane/cmd/lexicon-plane ./plane/cmd/lexicon || exit 1; \
	  $(PACKAGE_TOOL) deb --version $(VERSION) --arch $$a --out $(BUILD)/packages $(if $(PACKAGE_DATE),--date $(PACKAGE_DATE)) \
	    --agent $(BUILD)/agents/$$o-$$a/lexicon-agent --plane $$d/lexicon-plane --cli $$d/lexicon || exit 1; done

# debian-root makes build/debian-12/root, the Debian 12 machine the package tests run real apt and dpkg
# in and the netns cloud's debian-12 image overlays: Debian's own packages from deb.debian.org
# (mmdebstrap, minbase, with curl and ca-certificates for provisioning, nftables for the firewall
# converge applies, and netbase, whose /etc/protocols nft resolves protocol names such as ipv6-icmp
# with, as on every real Debian), its apt sources removed (each test names its own repository). It is
# made once into a temporary folder and renamed, so a run cut short never leaves half a root, and kept
# until `make clean`; its check file is the newest thing it must hold (/etc/protocols), so a root made
# before that is remade whole. A run against a slow mirror takes about four minutes. Tests read it, never write it: each mounts its own overlay on it.
DEBIAN_ROOT := $(BUILD)/debian-12/root
DEBIAN_MIRROR ?= http://deb.debian.org
debian-root: $(DEBIAN_ROOT)/etc/protocols

$(DEBIAN_ROOT)/etc/protocols:
	@rm -rf $(DEBIAN_ROOT).tmp && mkdir -p $(dir $(DEBIAN_ROOT))
	mmdebstrap --variant=minbase --include=ca-certificates,curl,nftables,netbase --customize-hook='rm -f "$$1/etc/apt/sources.list"' \
	  bookworm $(DEBIAN_ROOT).tmp "deb $(DEBIAN_MIRROR)/debian bookworm main" "deb $(DEBIAN_MIRROR)/debian-security bookworm-security main"
	rm -rf $(DEBIAN_ROOT) && mv $(DEBIAN_ROOT).tmp $(DEBIAN_ROOT)

# release signs every built module and both agents with the development key (made once, in build/keys)
# into build/release, logs the statement in a transparency log with a signed timestamp, as a publisher
# would, and makes a matching trust folder in build/trust that holds the key, the log's key and the
# standard trusted_root.json (naming the log and its timestamp authority). The log is `lexicon-release
# testlog`, started for the purpose on a free port and stopped after: it keeps nothing, but the bundle
# carries the entry's inclusion proof, signed checkpoint and timestamp, which verify offline. The
# sequence is the time, so each release is newer than the last; the agents are pinned as
# agent/<os>-<arch>. A development key from before publisher keys were P-256 (an Ed25519 seed, 43
# characters) is set aside and a new one made.
RELEASE_LOG := $(BUILD)/release-log
release: modules agents
	@mkdir -p $(BUILD)/keys
	@if grep -qx 'publisher-private:[A-Za-z0-9_-]\{43\}' $(BUILD)/keys/publisher.key 2>/dev/null; then \
	  echo "build/keys/publisher.key is a retired Ed25519 key: moved to publisher.key.retired"; \
	  mv $(BUILD)/keys/publisher.key $(BUILD)/keys/publisher.key.retired; rm -f $(BUILD)/keys/publisher.pub $(BUILD)/keys/publisher.pem; fi
	@test -f $(BUILD)/keys/publisher.key || $(BIN)/lexicon-release keygen --out $(BUILD)/keys
	@rm -rf $(BUILD)/release $(BUILD)/trust $(RELEASE_LOG) && mkdir -p $(RELEASE_LOG)
	$(BIN)/lexicon-release build --key $(BUILD)/keys/publisher.key --modules $(BUILD)/modules \
	  --release $(VERSION) --sequence $$(date +%s) --out $(BUILD)/release \
	  $(foreach p,$(AGENT_PLATFORMS),--agent $(p)=$(BUILD)/agents/$(subst /,-,$(p))/lexicon-agent)
	@coproc TESTLOG { exec $(BIN)/lexicon-release testlog --listen 127.0.0.1:0 -o json \
	    --log-key-out $(RELEASE_LOG)/log.pub --tsa-chain-out $(RELEASE_LOG)/tsa.pem; }; \
	  read -r ready <&$${TESTLOG[0]} || { echo "the test log did not start"; exit 1; }; \
	  url=$$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' <<<"$$ready"); \
	  echo "$(BIN)/lexicon-release log --rekor $$url --tsa $$url/api/v1/timestamp $(BUILD)/release"; \
	  $(BIN)/lexicon-release log --rekor $$url --tsa $$url/api/v1/timestamp $(BUILD)/release; st=$$?; \
	  kill $$TESTLOG_PID; wait $$TESTLOG_PID; exit $$st
	$(BIN)/lexicon-release trust init --out $(BUILD)/trust --key $(BUILD)/keys/publisher.pub \
	  --log-key $(RELEASE_LOG)/log.pub --tsa-chain $(RELEASE_LOG)/tsa.pem
	$(BIN)/lexicon-release verify $(BUILD)/release --trust $(BUILD)/trust

# The demo's Debian machine gets its packages from apttest's fixture repository, which lexfix-repo builds.
demo: modules
	$(GO) build -o $(BUILD)/tools/lexfix-repo ./host/wasm/pkgmgr/apttest/cmd/lexfix-repo
	$(GO) run ./examples/fleet-in-a-box

# standard-verifiers builds the Sigstore verifiers the standard-verifier test runs a release through:
# cosign from the Go module proxy, in its own module (tools/cosign) so its graph stays out of go.mod,
# and sigstore-js's verify API from npm (tools/sigstore-js, installed with its lock file, no install
# scripts), run with the machine's node. Both are rebuilt only when their pins change; cosign is linked
# without symbols, which halves its link time.
COSIGN := $(BUILD)/tools/cosign
SIGSTORE_JS := $(BUILD)/sigstore-js
standard-verifiers: $(COSIGN) $(SIGSTORE_JS)/node_modules/.package-lock.json $(SIGSTORE_JS)/verify.mjs

$(COSIGN): tools/cosign/go.mod tools/cosign/go.sum
	@mkdir -p $(dir $@)
	cd tools/cosign && $(GO) build -trimpath -ldflags='-s -w' -o $(abspath $@) github.com/sigstore/cosign/v3/cmd/cosign

# An npm tool under tools/NAME (package.json and its lock file, pinned) is installed into build/NAME
# with npm ci, no install scripts, and reinstalled only when its pins change; its scripts are copied.
$(BUILD)/%/node_modules/.package-lock.json: tools/%/package.json tools/%/package-lock.json
	@mkdir -p $(BUILD)/$*
	cp tools/$*/package.json tools/$*/package-lock.json $(BUILD)/$*/
	cd $(BUILD)/$* && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error

$(BUILD)/%.mjs: tools/%.mjs
	@mkdir -p $(dir $@)
	cp $< $@

# lighthouse installs npm's Lighthouse (tools/lighthouse), which TestWebUI runs with Debian's Chromium
# on the UI's main pages: scores printed, accessibility and best practices asserted.
LIGHTHOUSE := $(BUILD)/lighthouse
lighthouse: $(LIGHTHOUSE)/node_modules/.package-lock.json $(LIGHTHOUSE)/audit.mjs

# versitygw is the S3-compatible server the backup tests and benchmark start on loopback (POSIX backend):
# built once from the Go module proxy, from its own module under tools/ so its graph stays out of go.mod.
VERSITYGW := $(BUILD)/tools/versitygw
versitygw: $(VERSITYGW)
$(VERSITYGW): tools/versitygw/go.mod tools/versitygw/go.sum
	@mkdir -p $(dir $@)
	cd tools/versitygw && $(GO) build -trimpath -o $(abspath $@) github.com/versity/versitygw/cmd/versitygw

# examples/authors builds an author's module offline (GOPROXY=off) from the module cache; resolving
# its graph needs the go.mod of every module in ours, which a build alone does not fetch, and the
# releases of the modules ours replaces with a patched copy (third_party), which an author gets.
test: modules debian-root standard-verifiers lighthouse $(VERSITYGW)
	$(GO) list -m all > /dev/null
	$(GO) mod download $$($(GO) list -m -f '{{if .Replace}}{{.Path}}@{{.Version}}{{end}}' all)
	$(GO) test -timeout 45m ./...
	$(GO) test -race -run 'Test(SQLite|Postgres)/(Concurrent|Notify)' ./plane/store/...
	$(GO) test -race ./plane/internal/drivers/ ./plane/internal/seal/
	$(GO) test -race ./plane/internal/webhook/ ./plane/internal/server/
	$(GO) test -race -run 'TestRun$$' ./agent/internal/recipes/
	$(GO) test -race -run 'TestConcurrentCreates' ./plugins/cloud/netns/
	$(GO) test -race ./backup/archive/
	$(GO) test -race -run 'TestInterpret' ./host/wasm/

# bench prints the figures the issues ask for. The fleet load test needs PostgreSQL and takes minutes.
# bench/ is its own Go module (it links the Extism Go SDK, which the project must not depend on):
# wordbench runs the word host beside Extism on the same word and prints the ratios; idlebench runs
# fleet in a box and measures the idle agent with its workers. BenchmarkBackup1GiB backs up a 1 GiB
# tree with the agent's backup word and with restic, to the same versitygw, rounds interleaved.
bench: modules debian-root $(VERSITYGW)
	$(MAKE) --no-print-directory agent-size
	cd bench && $(GO) run ./cmd/wordbench -module ../$(WASM_DIR)/testdata/ref.wasm
	$(GO) build -o $(BUILD)/tools/fleet-in-a-box ./examples/fleet-in-a-box
	cd bench && $(GO) run ./cmd/idlebench -demo ../$(BUILD)/tools/fleet-in-a-box -bin ../$(BIN) -modules ../$(BUILD)/modules
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./registry/...
	$(GO) test -run '^$$' -bench 'BenchmarkCall$$' -benchtime 400x -count 5 ./host/wasm/
	$(GO) test -run '^$$' -bench 'BenchmarkDeadlineOvershoot|BenchmarkFirstCall' -benchtime 300x -count 1 ./host/wasm/
	$(GO) test -run '^$$' -bench 'BenchmarkRSSPerWord' -benchtime 5x -count 5 ./host/wasm/
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./host/goplugin/
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./plane/internal/drivers/
	$(GO) test -run '^$$' -bench BenchmarkWitnessListing10k -benchtime 5x -count 3 ./plane/internal/backups/
	$(GO) test -run '^$$' -bench BenchmarkInstance -benchtime 20x -count 3 ./plugins/cloud/netns/
	$(GO) test -run '^$$' -bench BenchmarkPackagesReport -benchtime 20x -count 1 ./primitives/packages_report/
	$(GO) test -run '^$$' -bench BenchmarkConvergeUnchanged -benchtime 10x -count 3 ./primitives/converge/
	$(GO) test -run '^$$' -bench BenchmarkFleet -benchtime 1x -timeout 60m ./plane/internal/loadtest/
	$(GO) test -run '^$$' -bench BenchmarkBatch1000 -benchtime 1x -timeout 30m ./plane/internal/loadtest/
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./plane/store/...
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./plane/internal/metrics/
	$(GO) test -run '^$$' -bench BenchmarkJobRollout1000 -benchtime 1x -timeout 30m ./plane/internal/rollouts/
	$(GO) test -run '^$$' -bench BenchmarkAgentUpdate -benchtime 1x -timeout 30m ./plane/internal/e2e/
	$(GO) test -run '^$$' -bench BenchmarkProvisionToFirstWord -benchtime 1x -timeout 30m ./plane/internal/e2e/
	$(GO) test -run '^$$' -bench BenchmarkRender -benchtime 50x -count 1 ./plane/internal/ui/
	$(GO) test -run '^$$' -bench BenchmarkSecurityView10000 -benchtime 5x -count 1 -timeout 30m ./plane/internal/security/
	$(GO) test -run '^$$' -bench BenchmarkRender10000Nodes -benchtime 3x -count 1 ./plane/internal/roles/
	$(GO) test -run '^$$' -bench BenchmarkBackup1GiB -benchtime 1x -timeout 60m ./backup/backupe2e/

# ui-shots runs the web UI's browser test (headless Chromium, a real plane and agent) and keeps a
# screenshot of every page it visits in build/ui-shots/, at desktop width (NAME.png) and at a phone's
# 390 px (NAME-390.png); the test runs Lighthouse on the main pages too.
ui-shots: wasm lighthouse
	@mkdir -p $(BUILD)/ui-shots
	LEXICON_UI_SHOTS=$(abspath $(BUILD))/ui-shots $(GO) test -count 1 -timeout 20m -run 'TestWebUI$$' ./plane/internal/e2e/

# depaware rewrites the golden lists of what the agent binary and the word SDK link
# (agent/cmd/lexicon-agent/depaware.txt, sdk/word/depaware.txt), which `make test` checks. A change to
# them is a reviewed change: commit it with the dependency that caused it.
depaware:
	$(GO) test -count 1 -run 'TestGoldenDeps$$' . -update

# openapi regenerates the admin API's OpenAPI document (plane/api/openapi.json, committed) from
# plane/api's route table and types; `make test` fails while it is stale.
openapi:
	$(GO) generate ./plane/api

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)

# proto regenerates the driver contracts' gRPC code (committed) with the protoc-gen-go tools go.mod pins.
PROTOS := sdk/driver/proto/driver.proto sdk/driver/cloud/proto/cloud.proto sdk/driver/dns/proto/dns.proto
proto:
	@mkdir -p $(BUILD)/tools
	$(GO) build -o $(BUILD)/tools/ google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
	protoc -I . --plugin=protoc-gen-go=$(BUILD)/tools/protoc-gen-go --plugin=protoc-gen-go-grpc=$(BUILD)/tools/protoc-gen-go-grpc \
		--go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative $(PROTOS)
