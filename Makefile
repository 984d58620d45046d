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

# wasm builds every word and recipe module; empty until words exist.
wasm:
	@true

test: wasm
	$(GO) test ./...
	$(GO) test -race -run 'Test(SQLite|Postgres)/(Concurrent|Notify)' ./plane/store/...

bench: wasm
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./registry/...
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./plane/store/...

release: build wasm
	@echo "release: lexicon-release is not built yet"

demo: release
	@echo "demo: not yet"

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)
