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
	"github.com/lexicon-fleet/lexicon/agent/internal/recipes"
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
		Path: "run", MaxArgs: 0,
		Summary: "run the agent: the recipes of its verified vocabulary and, once joined, the plane's jobs",
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
			sd, err := d.open()
			if err != nil {
				return nil, err
			}
			v, err := vocab.Open(d.trustDir(), sd.ModulesDir(), nil)
			if err != nil {
				return nil, err
			}
			pol := policy.Load(d.policyFile())
			if err := pol.Problem(); err != nil {
				log.Warn("this node accepts no jobs and runs no repairs until its policy is fixed", "err", err)
			}
			h, err := wasm.New(ctx, wasm.Config{CacheDir: sd.WasmCache(), CacheKeyFile: sd.WasmCacheKey(), Self: pol.Names, Logger: log})
			if err != nil {
				return nil, err
			}
			defer h.Close()
			rn := &runner.Runner{Host: h, Vocab: v, PolicyFile: d.policyFile(), LockFile: sd.LockFile(), Log: log}
			loop, err := recipes.New(recipes.Config{Vocab: v, Runner: rn, Dir: sd.RecipesDir(), ConfigDir: d.config,
				AgentDigest: selfDigest(log), Log: log.With("part", "recipes")})
			if err != nil {
				return nil, err
			}
			// The recipe loop runs on every agent, paired or not, beside the claim loop.
			ctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = loop.Run(ctx) })
			defer wg.Wait()
			defer cancel()

			p, err := sd.Pairing()
			if err == nil && p.Status != channel.JoinApproved {
				log.Warn("the join is not approved; running recipes only (restart once lexicon-agent status says approved)", "status", p.Status)
			}
			if err != nil || p.Status != channel.JoinApproved {
				if err != nil {
					log.Warn("not joined to a plane; running recipes only", "err", err)
				}
				log.Info("agent running", "version", agent.Version, "policy", pol.String(), "statement", v.Ref().Sequence, "pid", os.Getpid())
				<-ctx.Done()
				return nil, nil
			}
			_, _, c, err := d.paired()
			if err != nil {
				return nil, pairingOver(err)
			}
			log.Info("agent running", "node", p.NodeID, "plane", p.Plane, "version", agent.Version, "policy", pol.String(),
				"statement", v.Ref().Sequence, "pid", os.Getpid())
			dm := &daemon.Daemon{Client: c, Vocab: v, Version: agent.Version, Log: log, Runner: rn, Recipes: loop}
			return nil, pairingOver(dm.Run(ctx))
		},
	}
}

// ExitPairingOver is run's exit status when the plane has ended this node's pairing (disconnected, or
// the node left): agent.not_joined. Starting again cannot help until the machine joins again, so the
// service unit names it in RestartPreventExitStatus=. 6 is the LSB status "program is not configured".
const ExitPairingOver = 6

// pairingOverError is an agent.not_joined error that ends run with ExitPairingOver.
type pairingOverError struct{ error }

func (e pairingOverError) Unwrap() error { return e.error }
func (pairingOverError) ExitStatus() int { return ExitPairingOver }

// pairingOver gives err ExitPairingOver when it says the pairing is over, and returns it unchanged
// otherwise.
func pairingOver(err error) error {
	if errcode.Has(err, errcode.AgentNotJoined) {
		return pairingOverError{err}
	}
	return err
}

var _ cli.Statuser = pairingOverError{}

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
