// Command wasmpost is the build step every word and recipe goes through after `go build` and before it
// is hashed and signed: it merges the module's data segments (package datamerge).
//
//	wasmpost -o build/wasm/disk_usage.wasm build/tmp/disk_usage.wasm
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/lexicon-fleet/lexicon/host/wasm/internal/datamerge"
)

func main() {
	out := flag.String("o", "", "where to write the processed module")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: wasmpost -o OUT.wasm IN.wasm\n\nMerges a WebAssembly module's data segments so a fresh instance is cheap.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	in, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmpost:", err)
		os.Exit(1)
	}
	merged, st, err := datamerge.Merge(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wasmpost: %s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	tmp := *out + ".tmp"
	if err := os.WriteFile(tmp, merged, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wasmpost:", err)
		os.Exit(1)
	}
	if err := os.Rename(tmp, *out); err != nil {
		fmt.Fprintln(os.Stderr, "wasmpost:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d data segments -> %d, %d bytes\n", *out, st.Before, st.After, len(merged))
}
