package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/lexicon-fleet/lexicon/agent"
	"github.com/lexicon-fleet/lexicon/agent/internal/daemon"
	"github.com/lexicon-fleet/lexicon/agent/internal/facts"
	"github.com/lexicon-fleet/lexicon/agent/internal/metrics"
	"github.com/lexicon-fleet/lexicon/agent/internal/recipes"
	"github.com/lexicon-fleet/lexicon/agent/internal/runner"
	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/internal/update"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// updateFlags are the self-update settings `run` and `guard` share.
type updateFlags struct {
	trial, deadline, expiryEvery time.Duration
}

func (u *updateFlags) setup(fs *flag.FlagSet) {
	fs.DurationVar(&u.trial, "update-trial", update.DefaultTrial, "how long a new agent runs, with a claim round trip, before it is kept")
	fs.DurationVar(&u.deadline, "update-trial-deadline", update.DefaultTrialDeadline, "a new agent that has not passed its trial by then exits, and the next start rolls it back")
	fs.DurationVar(&u.expiryEvery, "statement-check", time.Minute, "how often the statement's expiry is checked")
}

// updater opens the update folder of sd for this binary.
func (u *updateFlags) updater(sd state.Dir, log *slog.Logger, onState func(string)) (*update.Updater, error) {
	return update.New(update.Config{
		Dir: sd.UpdateDir(), Version: agent.Version, Platform: agent.Platform(), LockFile: sd.LockFile(),
		TrialFor: u.trial, TrialDeadline: u.deadline, Log: log, OnState: onState, TestPause: agent.TestFault == "pause",
	})
}

func runCmd() *cli.Command {
	var d dirs
	var uf updateFlags
	var debug bool
	var metricsListen string
	return &cli.Command{
		Path: "run", MaxArgs: 0,
		Summary: "run the agent: the recipes of its verified vocabulary and, once joined, the plane's jobs",
		Setup: func(fs *flag.FlagSet) {
			d.setup(fs)
			uf.setup(fs)
			fs.BoolVar(&debug, "debug", false, "log debug events")
			fs.StringVar(&metricsListen, "metrics-listen", "", "serve /metrics (Prometheus) on this loopback address, 127.0.0.1:PORT")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if agent.TestFault == "crash" || agent.TestFault == "nostart" {
				os.Exit(2) // a test build standing in for an agent that dies at start
			}
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
			sd, err := d.open()
			if err != nil {
				return nil, err
			}
			// The trial is settled before anything else: a version whose previous start died on trial
			// must not get as far as a job.
			up, err := uf.updater(sd, log.With(errcode.DetailPart, "update"), m.SetUpdateState)
			if err != nil {
				return nil, err
			}
			if err := up.Start(); err != nil {
				return nil, err
			}
			_, v, err := d.vocabulary()
			if err != nil {
				return nil, err
			}
			v.SetAgentVersion(agent.Version)
			pol := policy.Load(d.policyFile())
			if err := pol.Problem(); err != nil {
				log.Warn("this node accepts no jobs and runs no repairs until its policy is fixed", "err", err)
			}
			if agent.TestFault == "pause" {
				pauseConverge(sd.ConvergeDir(), log.With(errcode.DetailPart, "converge"))
			}
			plane := &planeFetcher{}
			h, err := wasm.New(ctx, d.hostConfig(sd, pol, plane, log))
			if err != nil {
				return nil, err
			}
			defer h.Close()
			rn := &runner.Runner{Host: h, Vocab: v, PolicyFile: d.policyFile(), LockFile: sd.LockFile(), Log: log, Metrics: m}
			loop, err := recipes.New(recipes.Config{Vocab: v, Runner: rn, Policy: pol, Dir: sd.RecipesDir(), ConfigDir: d.config,
				AgentDigest: up.Self(), Log: log.With(errcode.DetailPart, "recipes"), Metrics: m,
				AfterChecks: rn.FreeMemory})
			if err != nil {
				return nil, err
			}
			// The recipe loop runs on every agent, paired or not, beside the claim loop.
			ctx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { _ = loop.Run(ctx) })
			wg.Go(func() { watchExpiry(ctx, v, uf.expiryEvery, log) })
			if up.OnTrial() {
				wg.Go(func() { watchTrial(ctx, up, log) })
			}
			defer wg.Wait()
			defer cancel()
			defer func() {
				if ctx.Err() != nil {
					up.Stopping() // SIGTERM: a deliberate stop restarts the trial
				}
			}()

			// recipesOnly keeps the agent up for its recipes when there is no plane to claim from: a
			// restart could not help, and the machine still repairs what it can.
			recipesOnly := func(msg string, args ...any) (any, error) {
				up.Stopping() // no claim can pass a trial; this is no fault of the version
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
			plane.c.Store(c)
			log.Info("agent running", "node", p.NodeID, "plane", p.Plane, "version", agent.Version, "policy", pol.String(),
				"statement", v.Ref().Sequence, "pid", os.Getpid())
			if agent.TestFault == "hang" {
				log.Warn("test fault: this agent never claims")
				<-ctx.Done()
				return nil, nil
			}
			dm := &daemon.Daemon{Client: c, Vocab: v, Version: agent.Version, Log: log, Runner: rn, Recipes: loop, Update: up,
				Facts: (&facts.Reader{}).Facts,
				// The reach is computed again for each claim from the policy file as the word host
				// and the runner would read it; an unchanged reach keeps claims brief.
				Reach: func() []channel.WordReach {
					run := policy.Running(pol, policy.Load(d.policyFile()))
					reserved := d.reserved(sd)
					var out []channel.WordReach
					for _, w := range v.Words() {
						out = append(out, run.Reach(w.Manifest, w.Module, reserved))
					}
					return out
				},
				UpdateOff: func() (bool, string) {
					if policy.Load(d.policyFile()).UpdatesOff() {
						return true, "turned off by this node's policy (update: off)"
					}
					return false, ""
				}}
			err = dm.Run(ctx)
			if errors.Is(err, update.ErrRestart) {
				log.Info("agent exiting for its supervisor to start the new binary", "version", agent.Version)
				return nil, nil
			}
			if errcode.Has(err, errcode.AgentNotJoined) {
				return recipesOnly("the plane ended this node's pairing", "err", err)
			}
			return nil, err
		},
	}
}

// watchExpiry re-checks the statement's expiry: a running agent must not keep using a statement past
// its expiry just because no new one arrived.
func watchExpiry(ctx context.Context, v interface{ CheckExpiry() bool }, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	frozen := false
	for {
		if now := v.CheckExpiry(); now != frozen {
			frozen = now
			if frozen {
				log.Error("statement expired: jobs and repairs are refused until a renewed statement arrives", "code", errcode.StatementExpired)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// watchTrial ends a start that has not passed its trial in time (it hangs, or cannot reach the
// plane): it exits with the trial still marked, so the next start rolls it back.
func watchTrial(ctx context.Context, up *update.Updater, log *slog.Logger) {
	t := time.NewTimer(up.TrialDeadline())
	defer t.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-up.TrialDone():
			return
		case <-up.Stopped():
			return
		case <-tick.C:
			up.Tick()
		case <-t.C:
			log.Error("agent update: the trial did not pass in time; exiting so the next start rolls this version back", "deadline", up.TrialDeadline())
			os.Exit(3)
		}
	}
}

// backupConfig is the node's side of backups for the word host: its policy's backup section and the
// state folder where the host keeps the node's backup key. Without a section, backups are off.
func backupConfig(pol *policy.Policy, sd state.Dir) *wasm.BackupConfig {
	if pol.Problem() != nil || pol.Backup == nil {
		return nil
	}
	return &wasm.BackupConfig{Policy: pol.Backup, Dir: sd.BackupDir()}
}
