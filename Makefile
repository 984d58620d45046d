# Lexicon's one build file. `make test` is the only test command; `make demo` is fleet in a box.
SHELL := /bin/bash
GO ?= go
BUILD := build
BIN := $(BUILD)/bin

# Binaries are every main package under the owners' cmd/ folders and plugins/.
CMDS := $(wildcard registry/cmd/* agent/cmd/* plane/cmd/*)

.PHONY: all build wasm test bench demo release lint clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./,$(CMDS))

# wasm builds every word and recipe module: primitives/<name> -> build/wasm/<name>.wasm, the example word,
# and the host's test words. Each is built reproducibly (-trimpath, no VCS stamp) and its data segments
# merged by wasmpost, before anything hashes or signs it.
WASM_DIR := $(BUILD)/wasm
WASMPOST := $(BUILD)/tools/wasmpost
WORDS := $(patsubst primitives/%/main.go,%,$(wildcard primitives/*/main.go))
TESTWORDS := $(patsubst host/wasm/testdata/%/main.go,%,$(wildcard host/wasm/testdata/*/main.go))
WASM_OUT := $(WORDS:%=$(WASM_DIR)/%.wasm) $(TESTWORDS:%=$(WASM_DIR)/testdata/%.wasm) $(WASM_DIR)/examples/hello.wasm
WORD_SDK := $(shell find sdk/word sdk/errcode -name '*.go' -not -name '*_test.go')
WASM_BUILD = @mkdir -p $(dir $@) && GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -o $@.raw ./$< && $(WASMPOST) -o $@ $@.raw && rm -f $@.raw

wasm: $(WASM_OUT)

$(WASMPOST): $(wildcard host/wasm/internal/datamerge/*.go host/wasm/internal/cmd/wasmpost/*.go)
	@mkdir -p $(dir $@)
	$(GO) build -o $@ ./host/wasm/internal/cmd/wasmpost

.SECONDEXPANSION:
$(WASM_DIR)/%.wasm: primitives/% $$(wildcard primitives/%/*.go) $(WORD_SDK) $(WASMPOST)
	$(WASM_BUILD)
$(WASM_DIR)/testdata/%.wasm: host/wasm/testdata/% $$(wildcard host/wasm/testdata/%/*.go) $(WORD_SDK) $(WASMPOST)
	$(WASM_BUILD)
$(WASM_DIR)/examples/hello.wasm: examples/word-hello $(wildcard examples/word-hello/*.go) $(WORD_SDK) $(WASMPOST)
	$(WASM_BUILD)

test: wasm
	$(GO) test ./...

bench: wasm
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./registry/...

release: build wasm
	@echo "release: lexicon-release is not built yet"

demo: release
	@echo "demo: not yet"

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)
