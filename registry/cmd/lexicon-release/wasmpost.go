package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/lexicon-fleet/lexicon/registry/cmd/lexicon-release/internal/datamerge"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// wasmpostResult says what wasmpost did to one module.
type wasmpostResult struct {
	Out            string `json:"out"`
	SegmentsBefore int    `json:"segments_before"`
	SegmentsAfter  int    `json:"segments_after"`
	Bytes          int    `json:"bytes"`
}

func (r wasmpostResult) Text(w io.Writer) {
	fmt.Fprintf(w, "%s: %d data segments -> %d, %d bytes\n", r.Out, r.SegmentsBefore, r.SegmentsAfter, r.Bytes)
}

// wasmpostCmd is the build step every word and recipe goes through after `go build` and before it is
// hashed and signed (package datamerge says what it does and why). It lives in the publisher's tool so
// that an outside author has it where build and sign are; --out, because -o is the output format.
func wasmpostCmd() *cli.Command {
	var out string
	return &cli.Command{
		Path: "wasmpost", Args: "--out OUT.wasm IN.wasm", MinArgs: 1, MaxArgs: 1,
		Summary: "merge a built module's data segments, as every word needs before it is signed",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "where to write the processed module (written whole, then renamed into place)")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if out == "" {
				return nil, cli.UsageError("wasmpost needs --out")
			}
			in, err := os.ReadFile(args[0])
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", args[0])
			}
			merged, st, err := datamerge.Merge(in)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.WordModuleInvalid, "%s", args[0])
			}
			// Written beside and renamed, so a build stopped half-way never leaves a truncated module
			// that make would take as up to date.
			tmp := out + ".tmp"
			if err := os.WriteFile(tmp, merged, 0o644); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", tmp)
			}
			if err := os.Rename(tmp, out); err != nil {
				os.Remove(tmp)
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", out)
			}
			return wasmpostResult{Out: out, SegmentsBefore: st.Before, SegmentsAfter: st.After, Bytes: len(merged)}, nil
		},
	}
}
