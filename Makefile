# Lexicon's one build file. `make test` is the only test command; `make demo` is fleet in a box.
SHELL := /bin/bash
GO ?= go
BUILD := build
BIN := $(BUILD)/bin

# Binaries are every main package under the owners' cmd/ folders and plugins/.
CMDS := $(wildcard registry/cmd/* agent/cmd/* plane/cmd/*)

.PHONY: all build wasm test bench demo release lint clean proto drivers

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./,$(CMDS))

# wasm builds every word and recipe module; empty until words exist.
wasm:
	@true

test: wasm
	$(GO) test ./...

bench: wasm
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./registry/...
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 5 ./host/goplugin/

release: build wasm
	@echo "release: lexicon-release is not built yet"

demo: release
	@echo "demo: not yet"

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BUILD)

# drivers builds every driver as lexicon-driver-<kind>-<name>, the way a release ships it: stripped,
# without local paths (host/goplugin's start-up figures assume this build).
DRIVERS := $(wildcard plugins/cloud/* plugins/dns/*)
build: drivers
drivers:
	@mkdir -p $(BIN)
	@set -e; for d in $(DRIVERS); do \
		kind=$$(basename $$(dirname $$d)); name=$$(basename $$d); \
		$(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/lexicon-driver-$$kind-$$name ./$$d; \
	done
	$(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/lexicon-driver-dns-memory ./examples/driver-memory

# proto regenerates the driver contracts' gRPC code (committed) with the protoc-gen-go tools go.mod pins.
PROTOS := sdk/driver/proto/driver.proto sdk/driver/cloud/proto/cloud.proto sdk/driver/dns/proto/dns.proto
proto:
	@mkdir -p $(BUILD)/tools
	$(GO) build -o $(BUILD)/tools/ google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
	protoc -I . --plugin=protoc-gen-go=$(BUILD)/tools/protoc-gen-go --plugin=protoc-gen-go-grpc=$(BUILD)/tools/protoc-gen-go-grpc \
		--go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative $(PROTOS)
