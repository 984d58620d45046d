package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// testLogCmd serves an in-memory log with Rekor v2's write API and its read side (checkpoint and
// tiles, from which consistency proofs are built), so the publisher round trip can be tried, and
// tested, without a public log. Test witnesses may cosign its checkpoints. It keeps nothing: stop it
// and the log is gone.
func testLogCmd() *cli.Command {
	var listen, origin, keyOut, witnessOut string
	var witnesses multiFlag
	return &cli.Command{
		Path: "testlog", Args: "[--listen ADDR] [--origin HOST] --log-key-out FILE [--witness NAME... --witness-key-out FILE]", MaxArgs: 0,
		Summary: "serve an in-memory test log with the Rekor v2 API (for trying and testing; it keeps nothing)",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&listen, "listen", "127.0.0.1:3003", "address to serve on")
			fs.StringVar(&origin, "origin", "log.lexicon.test", "log origin named in checkpoints")
			fs.StringVar(&keyOut, "log-key-out", "", "file to write the log's log-key: line to (required)")
			fs.Var(&witnesses, "witness", "name of an in-memory test witness that cosigns every checkpoint (repeatable)")
			fs.StringVar(&witnessOut, "witness-key-out", "", "file to write the test witnesses' witness-key: lines to (needed with --witness)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if keyOut == "" {
				return nil, cli.UsageError("testlog needs --log-key-out FILE")
			}
			if (len(witnesses) > 0) != (witnessOut != "") {
				return nil, cli.UsageError("--witness and --witness-key-out go together")
			}
			lg := tlogtest.New(origin)
			var witnessKeys []string
			for _, name := range witnesses {
				w := tlogtest.NewWitness(name)
				lg.AddWitness(w)
				witnessKeys = append(witnessKeys, w.PublicKey().String())
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot listen on %s", listen)
			}
			if err := keys.WritePublic(keyOut, lg.PublicKey().String()); err != nil {
				ln.Close()
				return nil, err
			}
			if len(witnessKeys) > 0 {
				if err := keys.WritePublic(witnessOut, strings.Join(witnessKeys, "\n")); err != nil {
					ln.Close()
					return nil, err
				}
			}
			env.Progressf("WARNING: test log, in memory only; not a transparency log anyone else can audit")
			env.Progressf("serving the Rekor v2 API on http://%s (origin %s); log key in %s", ln.Addr(), origin, keyOut)
			if len(witnessKeys) > 0 {
				env.Progressf("WARNING: test witnesses cosign whatever this log signs; their keys are in %s", witnessOut)
			}
			srv := &http.Server{Handler: lg, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdown)
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return nil, errcode.Wrap(err, errcode.IOFailed, "test log stopped")
			}
			return map[string]any{"entries": lg.Size()}, nil
		},
	}
}
