package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type buildResult struct{ *registry.BuildResult }

func (r buildResult) Text(w io.Writer) {
	fmt.Fprintf(w, "release %s (sequence %d): %d modules, %d subjects, signed by %s\n", r.Release, r.Sequence, len(r.Modules), r.Subjects, r.Publisher)
	fmt.Fprintf(w, "statement %s, expires %s\n", r.Statement, r.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintf(w, "wrote %s\n", r.OutDir)
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func buildCmd() *cli.Command {
	var (
		keyFile, modules, release, previous, history, expires, out, chainFile, commit, floor string
		sequence                                                                             uint64
		agents                                                                               multiFlag
	)
	return &cli.Command{
		Path:    "build",
		Args:    "--key KEY --modules DIR --release SEMVER --sequence N [--previous RELEASE_DIR] [--history DIR] [--expires DURATION] --out RELEASE_DIR",
		Summary: "collect modules, check contracts against the previous release, and write a signed release",
		MaxArgs: 0,
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&keyFile, "key", "", "publisher private key file (required)")
			fs.StringVar(&modules, "modules", "", "folder with one subfolder per module: manifest.json and its file (required)")
			fs.StringVar(&release, "release", "", "release version, MAJOR.MINOR.PATCH (required)")
			fs.Uint64Var(&sequence, "sequence", 0, "statement sequence, above every earlier release (required)")
			fs.StringVar(&previous, "previous", "", "the previous release folder: contracts, sequence and key chain carry over")
			fs.StringVar(&history, "history", "", "folder of every earlier release folder (as build --out writes them): each word is checked against each, so a word dropped and brought back keeps its contract")
			fs.StringVar(&expires, "expires", "90d", "validity, e.g. 90d or 2160h")
			fs.StringVar(&out, "out", "", "release folder to write (required)")
			fs.StringVar(&chainFile, "chain", "", "file of key-chain entries written by lexicon-release chain add or retire")
			fs.StringVar(&commit, "source-commit", "", "source commit the release was built from")
			fs.StringVar(&floor, "floor", "", "oldest agent version the plane supports")
			fs.Var(&agents, "agent", "agent binary as OS/ARCH=PATH (repeatable)")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if keyFile == "" || modules == "" || release == "" || sequence == 0 || out == "" {
				return nil, cli.UsageError("build needs --key, --modules, --release, --sequence and --out")
			}
			d, err := parseDuration(expires)
			if err != nil {
				return nil, err
			}
			key, err := keys.ReadPublisherPrivateFile(keyFile)
			if err != nil {
				return nil, err
			}
			chain, err := readChain(chainFile)
			if err != nil {
				return nil, err
			}
			agentMap := map[string]string{}
			for _, a := range agents {
				platform, path, ok := strings.Cut(a, "=")
				if !ok || !strings.Contains(platform, "/") {
					return nil, cli.UsageError("--agent takes OS/ARCH=PATH, not %q", a)
				}
				if err := checkAgentVersion(ctx, platform, path, release); err != nil {
					return nil, err
				}
				agentMap[platform] = path
			}
			res, err := registry.Build(registry.BuildOptions{
				Key: key, ModulesDir: modules, Release: release, Sequence: sequence, PreviousDir: previous, HistoryDir: history,
				Expires: d, SourceCommit: commit, Floor: floor, Chain: chain, Agents: agentMap, OutDir: out,
				Progress: env.Progressf,
			})
			if err != nil {
				return nil, err
			}
			return buildResult{res}, nil
		},
	}
}

// parseDuration takes Go durations and a days suffix ("90d").
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, cli.UsageError("--expires %q is not a number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, cli.UsageError("--expires %q is not a positive duration", s)
	}
	return d, nil
}

// readChain reads key-chain entries, one JSON object per line.
func readChain(path string) ([]statement.ChainEntry, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	var out []statement.ChainEntry
	for i, line := range keys.Lines(data) {
		var e statement.ChainEntry
		if err := strictjson.Decode([]byte(line), keys.MaxFileSize, &e); err != nil {
			return nil, errcode.Wrap(err, errcode.KeyMalformed, "%s line %d is not a key-chain entry", path, i+1)
		}
		out = append(out, e)
	}
	return out, nil
}
