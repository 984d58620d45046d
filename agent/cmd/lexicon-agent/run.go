package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/agent/internal/daemon"
	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/agent/internal/recipes"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func runCmd() *cli.Command {
	var d dirs
	var debug bool
	var metricsListen string
	return &cli.Command{
		Path: "run", MaxArgs: 0,
		Summary: "run the agent: the recipes of its verified vocabulary and, once joined, the plane's jobs",
		Setup: func(fs *flag.FlagSet) {
			d.setup(fs)
			fs.BoolVar(&debug, "debug", false, "log debug events")
			fs.StringVar(&metricsListen, "metrics-listen", "", "serve /metrics (Prometheus) on this loopback address, 127.0.0.1:PORT")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			level := slog.LevelInfo
			if debug {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
			var m *metrics.Agent
			if metricsListen != "" {
				// Opened first, so that a refused address stops the agent before it does anything.
				ln, err := metrics.Listen(metricsListen)
				if err != nil {
					return nil, err
				}
				defer ln.Close()
				m = metrics.New()
				go func() { _ = m.Serve(ln) }()
				log.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
			}
			sd, v, err := d.vocabulary()
			if err != nil {
				return nil, err
			}
			pol := policy.Load(d.policyFile())
			if err := pol.Problem(); err != nil {
				log.Warn("this node accepts no jobs and runs no repairs until its policy is fixed", "err", err)
			}
			h, err := wasm.New(ctx, wasm.Config{CacheDir: sd.WasmCache(), CacheKeyFile: sd.WasmCacheKey(), Self: pol.Names, Renewal: pol.Renewal, Logger: log})
			if err != nil {
				return nil, err
			}
			defer h.Close()
			rn := &runner.Runner{Host: h, Vocab: v, PolicyFile: d.policyFile(), LockFile: sd.LockFile(), Log: log, Metrics: m}
			loop, err := recipes.New(recipes.Config{Vocab: v, Runner: rn, Policy: pol, Dir: sd.RecipesDir(), ConfigDir: d.config,
				AgentDigest: selfDigest(log), Log: log.With(errcode.DetailPart, "recipes"), Metrics: m})
			if err != nil {
				return nil, err
			}
			// The recipe loop runs on every agent, paired or not, beside the claim loop.
			ctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = loop.Run(ctx) })
			defer wg.Wait()
			defer cancel()

			// recipesOnly keeps the agent up for its recipes when there is no plane to claim from: a
			// restart could not help, and the machine still repairs what it can.
			recipesOnly := func(msg string, args ...any) (any, error) {
				log.Warn(msg+"; running recipes only (join with lexicon-agent join, then restart)", args...)
				log.Info("agent running", "version", agent.Version, "policy", pol.String(), "statement", v.Ref().Sequence, "pid", os.Getpid())
				<-ctx.Done()
				return nil, nil
			}
			p, err := sd.Pairing()
			switch {
			case err != nil:
				return recipesOnly("not joined to a plane", "err", err)
			case p.Status != channel.JoinApproved:
				return recipesOnly("the join is not approved", "status", p.Status)
			}
			c, err := planeClient(sd, p)
			if err != nil {
				return recipesOnly("the pairing cannot be used", "err", err)
			}
			log.Info("agent running", "node", p.NodeID, "plane", p.Plane, "version", agent.Version, "policy", pol.String(),
				"statement", v.Ref().Sequence, "pid", os.Getpid())
			dm := &daemon.Daemon{Client: c, Vocab: v, Version: agent.Version, Log: log, Runner: rn, Recipes: loop}
			err = dm.Run(ctx)
			if errcode.Has(err, errcode.AgentNotJoined) {
				return recipesOnly("the plane ended this node's pairing", "err", err)
			}
			return nil, err
		},
	}
}

// selfDigest is the sha256 of the running binary, which scope release compares with the agent the
// statement pins. "" when it cannot be read: then no release-scoped recipe applies.
func selfDigest(log *slog.Logger) string {
	path, err := os.Executable()
	if err == nil {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			defer f.Close()
			h := sha256.New()
			if _, err = io.Copy(h, f); err == nil {
				return hex.EncodeToString(h.Sum(nil))
			}
		}
	}
	log.Warn("cannot hash this agent's binary; release-scoped recipes will not apply", "err", err)
	return ""
}
