package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// testLogReady is the line testlog prints once it serves, so a script can wait for it and learn the
// address (with --listen 127.0.0.1:0, a free port).
type testLogReady struct {
	URL            string `json:"url"`
	Origin         string `json:"origin"`
	LogKeyFile     string `json:"log_key_file"`
	TSAURL         string `json:"tsa_url"`
	TSAChainFile   string `json:"tsa_chain_file,omitempty"`
	WitnessKeyFile string `json:"witness_key_file,omitempty"`
}

// testLogCmd serves an in-memory log with Rekor v2's write API and its read side (checkpoint and
// tiles, from which consistency proofs are built), and a timestamp authority, so the publisher round
// trip can be tried, and tested, without a public log. Test witnesses may cosign its checkpoints. It
// keeps nothing: stop it and the log is gone.
func testLogCmd() *cli.Command {
	var listen, origin, keyOut, tsaOut, witnessOut string
	var witnesses multiFlag
	return &cli.Command{
		Path: "testlog", Args: "[--listen ADDR] [--origin HOST] --log-key-out FILE [--tsa-chain-out FILE] [--witness NAME... --witness-key-out FILE]", MaxArgs: 0,
		Summary: "serve an in-memory test log with the Rekor v2 API and a timestamp authority (for trying and testing; it keeps nothing)",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&listen, "listen", "127.0.0.1:3003", "address to serve on (port 0 picks a free one)")
			fs.StringVar(&origin, "origin", "log.lexicon.test", "log origin named in checkpoints")
			fs.StringVar(&keyOut, "log-key-out", "", "file to write the log's log-key: line to (required)")
			fs.StringVar(&tsaOut, "tsa-chain-out", "", "file to write the timestamp authority's certificate chain (PEM) to")
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
			if tsaOut != "" {
				if err := keys.CreateExclusive(tsaOut, lg.TimestampChainPEM(), 0o644); err != nil {
					ln.Close()
					return nil, err
				}
			}
			if len(witnessKeys) > 0 {
				if err := keys.WritePublic(witnessOut, strings.Join(witnessKeys, "\n")); err != nil {
					ln.Close()
					return nil, err
				}
			}
			url := "http://" + ln.Addr().String()
			ready := testLogReady{URL: url, Origin: origin, LogKeyFile: keyOut, TSAURL: url + tlogtest.TimestampPath, TSAChainFile: tsaOut, WitnessKeyFile: witnessOut}
			env.Progressf("WARNING: test log, in memory only; not a transparency log anyone else can audit")
			if len(witnessKeys) > 0 {
				env.Progressf("WARNING: test witnesses cosign whatever this log signs; their keys are in %s", witnessOut)
			}
			// The listener is bound, so the log answers from the moment this line is read.
			if env.JSON {
				line, _ := json.Marshal(ready)
				fmt.Fprintln(env.Stdout, string(line))
			} else {
				fmt.Fprintf(env.Stdout, "serving the Rekor v2 API on %s (origin %s); log key in %s; timestamp authority %s\n", ready.URL, origin, keyOut, ready.TSAURL)
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
