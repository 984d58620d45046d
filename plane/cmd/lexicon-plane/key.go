package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/internal/keyrotate"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
)

type rotateResult struct {
	keyrotate.Result
	MasterKey string `json:"master_key"`
}

func (r rotateResult) Text(w io.Writer) {
	verb := "rotated"
	if r.Resumed {
		verb = "finished rotating"
	}
	fmt.Fprintf(w, "%s the master key %s from %s to %s: %d sealed values re-sealed; the old key stays in %s.prev\n",
		verb, r.MasterKey, r.From, r.To, r.Resealed, r.MasterKey)
	if len(r.Unopenable) > 0 {
		fmt.Fprintf(w, "%d values open under no key and were left as they are: %s\n", len(r.Unopenable), strings.Join(r.Unopenable, ", "))
	}
}

// keyRotateCmd rotates the master key while the plane serves: replicas follow it by reading the key
// files again (plane/internal/seal's Ring). Run it on a machine that holds the key file every replica
// reads; killed at any point, running it again finishes the rotation.
func keyRotateCmd() *cli.Command {
	var sf storeFlags
	var keyFile string
	var batch int
	return &cli.Command{
		Path: "key rotate", Args: "[--data DIR | --db URL] [--master-key FILE]", MaxArgs: 0,
		Summary: "re-seal every sealed value under a new master key, online; run again after a kill to finish",
		Setup: func(fs *flag.FlagSet) {
			sf.setup(fs)
			fs.StringVar(&keyFile, "master-key", "", "the master key file (default DATA/master.key); .next and .prev sit beside it")
			fs.IntVar(&batch, "batch", 200, fmt.Sprintf("rows re-sealed per page (1 to %d)", store.MaxSealedPage))
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if batch < 1 || batch > store.MaxSealedPage {
				return nil, cli.UsageError("--batch is 1 to %d", store.MaxSealedPage)
			}
			st, err := sf.open(ctx)
			if err != nil {
				return nil, err
			}
			defer st.Close()
			kp := keyPath(sf.data, keyFile)
			res, err := keyrotate.Rotate(ctx, keyrotate.Options{KeyFile: kp, Store: st, Batch: batch,
				Progress: func(kind store.SealedKind, n int) { env.Progressf("%s: %d re-sealed so far", kind, n) }})
			if err != nil {
				return nil, err
			}
			return rotateResult{Result: res, MasterKey: kp}, nil
		},
	}
}
