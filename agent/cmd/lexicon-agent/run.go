package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/agent/internal/daemon"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func runCmd() *cli.Command {
	var d dirs
	var debug bool
	return &cli.Command{
		Path: "run", MaxArgs: 0, Summary: "run the agent: keep the vocabulary current and run the plane's jobs",
		Setup: func(fs *flag.FlagSet) {
			d.setup(fs)
			fs.BoolVar(&debug, "debug", false, "log debug events")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			level := slog.LevelInfo
			if debug {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
			sd, p, c, err := d.paired()
			if err != nil {
				return nil, err
			}
			if p.Status != channel.JoinApproved {
				return nil, errcode.New(errcode.AgentNotJoined, "the join is %s, not approved; lexicon-agent status shows it", p.Status)
			}
			v, err := vocab.Open(d.trustDir(), sd.ModulesDir(), nil)
			if err != nil {
				return nil, err
			}
			pol := policy.Load(d.policyFile())
			if err := pol.Problem(); err != nil {
				log.Warn("this node accepts no jobs until its policy is fixed", "err", err)
			}
			h, err := wasm.New(ctx, wasm.Config{CacheDir: sd.WasmCache(), CacheKeyFile: sd.WasmCacheKey(), Self: pol.Names, Logger: log})
			if err != nil {
				return nil, err
			}
			defer h.Close()
			log.Info("agent running", "node", p.NodeID, "plane", p.Plane, "version", agent.Version, "policy", pol.String(),
				"statement", v.Ref().Sequence, "pid", os.Getpid())
			dm := &daemon.Daemon{
				Client: c, Vocab: v, Version: agent.Version, Log: log,
				Runner: &runner.Runner{Host: h, Vocab: v, PolicyFile: d.policyFile(), LockFile: sd.LockFile(), Log: log},
			}
			return nil, dm.Run(ctx)
		},
	}
}
