package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/agent/internal/joblock"
	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/policy"
	"github.com/lexicon-fleet/lexicon/host/wasm"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// devWarning is printed, loudly, whenever a module runs without a signature.
const devWarning = `
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! WARNING: --dev runs an UNSIGNED module that no release statement pins.        !!
!! It is for word authors on their own machines. The agent daemon never runs      !!
!! such a module; do not use this on a node you manage.                          !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
`

func wordRunCmd() *cli.Command {
	var (
		release, trust, name, params string
		dev                          bool
		module, manifestPath         string
		cacheDir, self, stateDir     string
		configDir, grantFile         string
	)
	return &cli.Command{
		Path:    "word run",
		Args:    "--release DIR --trust DIR --word NAME [--params JSON] | --dev --module X.wasm --manifest M.json",
		Summary: "run one word on this machine, from a verified release (or, for authors, --dev), under the job lock",
		MaxArgs: 0,
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&release, "release", "", "release directory (statement bundle and sha256/ store)")
			fs.StringVar(&trust, "trust", "", "trust directory holding the publisher keys")
			fs.StringVar(&name, "word", "", "name of the word in the release")
			fs.StringVar(&params, "params", "{}", "the word's params, one JSON object")
			fs.BoolVar(&dev, "dev", false, "run an unsigned module (authors only; never on a managed node)")
			fs.StringVar(&module, "module", "", "with --dev: the .wasm file")
			fs.StringVar(&manifestPath, "manifest", "", "with --dev: the manifest.json")
			fs.StringVar(&cacheDir, "cache-dir", defaultWordCache(), "compile cache (its key is kept beside it, in DIR.key)")
			fs.StringVar(&self, "self", "", "the node's own names for @self, comma-separated (host or host:port)")
			fs.StringVar(&stateDir, "state-dir", "", "the agent's state folder, whose job lock the word runs under (default "+state.DefaultDir+", when it exists)")
			fs.StringVar(&configDir, "config-dir", "", "the agent's config folder, whose policy's package bounds and backup section the word runs under (default "+DefaultConfigDir+", when its policy exists)")
			fs.StringVar(&grantFile, "grant", "", "a backup grant (JSON, mode 0600) for the run: the host holds it, the word never sees it")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			var m *manifest.Manifest
			var data []byte
			var digest string
			var err error
			switch {
			case dev && (release != "" || trust != "" || name != ""):
				return nil, cli.UsageError("--dev takes --module and --manifest, not --release, --trust or --word")
			case dev:
				if module == "" || manifestPath == "" {
					return nil, cli.UsageError("--dev needs --module and --manifest")
				}
				fmt.Fprint(env.Stderr, devWarning)
				m, data, digest, err = loadDev(module, manifestPath)
			default:
				if module != "" || manifestPath != "" {
					return nil, cli.UsageError("--module and --manifest go with --dev")
				}
				if release == "" || trust == "" || name == "" {
					return nil, cli.UsageError("word run needs --release, --trust and --word")
				}
				m, data, digest, err = loadReleased(release, trust, name)
			}
			if err != nil {
				return nil, err
			}
			packages, err := nodePackages(configDir)
			if err != nil {
				return nil, err
			}
			cfg := wasm.Config{CacheDir: cacheDir, PackagePolicy: packages}
			if cacheDir != "" {
				cfg.CacheKeyFile = filepath.Clean(cacheDir) + ".key"
			}
			var opts wasm.RunOptions
			if grantFile != "" {
				if opts.Grant, err = readGrant(grantFile); err != nil {
					return nil, err
				}
			}
			if cfg.Backup, err = wordBackupConfig(configDir, stateDir, grantFile != ""); err != nil {
				return nil, err
			}
			for n := range strings.SplitSeq(self, ",") {
				if n = strings.TrimSpace(n); n != "" {
					cfg.Self = append(cfg.Self, n)
				}
			}
			h, err := wasm.New(ctx, cfg)
			if err != nil {
				return nil, err
			}
			defer h.Close()
			mod, err := h.Load(ctx, m, data, digest)
			if err != nil {
				return nil, err
			}
			defer mod.Close()
			lock, err := takeJobLock(stateDir)
			if err != nil {
				return nil, err
			}
			defer lock.Release()
			return &wordResult{Result: mod.RunWith(ctx, []byte(params), opts), Word: m.Name, Dev: dev}, nil
		},
	}
}

// readGrant reads a backup grant from a file only its owner may read: its requests are signed and
// work, for anyone holding them, until they expire.
func readGrant(path string) (*channel.BackupGrant, error) {
	data, err := keys.ReadPrivate(path)
	if err != nil {
		return nil, err
	}
	var g channel.BackupGrant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, errcode.Wrap(err, errcode.BackupGrantInvalid, "%s is not a backup grant", path).With(errcode.DetailPath, path)
	}
	return &g, nil
}

// wordBackupConfig is the backup side of a word run by hand: the backup section of the node's policy
// and the state folder's backup key, as the daemon gives them. A run with a grant needs both.
func wordBackupConfig(configDir, stateDir string, needed bool) (*wasm.BackupConfig, error) {
	if configDir == "" {
		configDir = DefaultConfigDir
	}
	polFile := filepath.Join(configDir, policy.FileName)
	if _, err := os.Stat(polFile); err != nil && !needed {
		return nil, nil
	}
	pol := policy.Load(polFile)
	if err := pol.Problem(); err != nil {
		if needed {
			return nil, err
		}
		return nil, nil
	}
	if stateDir == "" {
		stateDir = state.DefaultDir
	}
	if _, err := os.Stat(stateDir); err != nil || pol.Backup == nil {
		if needed && pol.Backup != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "a backup word keeps the node's backup key in the state folder %s, which cannot be used", stateDir)
		}
		return nil, nil
	}
	return &wasm.BackupConfig{Policy: pol.Backup, Dir: state.Dir(stateDir).BackupDir()}, nil
}

// takeJobLock takes the node's job lock without waiting, as a repair does: a word run by hand never
// runs beside a job or a repair, and is refused with agent.busy while one holds the lock. With no
// folder named, the installed agent's is used when it exists; a machine without one runs no agent, so
// there is no job to exclude (nil, which Release accepts). A folder named but missing is io.failed.
func takeJobLock(dir string) (*joblock.Lock, error) {
	if dir == "" {
		if _, err := os.Stat(state.DefaultDir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		dir = state.DefaultDir
	}
	path := state.Dir(dir).LockFile()
	lock, err := joblock.TryAcquire(path)
	if errcode.Has(err, errcode.AgentBusy) {
		return nil, errcode.Wrap(err, errcode.AgentBusy, "a job or a repair holds the job lock %s; run the word again when it ends", path)
	}
	return lock, err
}

// nodePackages is the package bounds of the node's policy, which a word run by hand obeys as a job
// does. With no folder named, the installed agent's is used when its policy exists; a machine
// without one has no bounds beyond the manifest's. A policy that exists but cannot be trusted is its
// policy.untrusted: the node accepts nothing until it is fixed.
func nodePackages(dir string) (*manifest.NodePackages, error) {
	path := filepath.Join(dir, policy.FileName)
	if dir == "" {
		path = filepath.Join(DefaultConfigDir, policy.FileName)
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	pol := policy.Load(path)
	if err := pol.Problem(); err != nil {
		return nil, err
	}
	return pol.Packages, nil
}

// loadReleased verifies the release against the trust directory (accepting it, as the agent would) and
// returns the word with the digest the statement pins.
func loadReleased(release, trust, name string) (*manifest.Manifest, []byte, string, error) {
	rel, store, err := registry.OpenRelease(release, trust, time.Now())
	if err != nil {
		return nil, nil, "", err
	}
	m, data, err := rel.LoadModule(store, manifest.KindWord, name)
	if err != nil {
		return nil, nil, "", err
	}
	return m, data, m.Module.SHA256, nil
}

// loadDev reads an unsigned module; it is pinned by its own hash, which proves nothing but that the
// bytes compiled are the bytes read.
func loadDev(module, manifestPath string) (*manifest.Manifest, []byte, string, error) {
	raw, err := os.ReadFile(manifestPath)
	if err != nil {
		return nil, nil, "", errcode.Wrap(err, errcode.IOFailed, "cannot read %s", manifestPath)
	}
	m, err := manifest.Parse(raw)
	if err != nil {
		return nil, nil, "", err
	}
	data, err := os.ReadFile(module)
	if err != nil {
		return nil, nil, "", errcode.Wrap(err, errcode.IOFailed, "cannot read %s", module)
	}
	return m, data, cas.Sum(data), nil
}

func defaultWordCache() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "lexicon", "wasm")
}

// wordResult is the result envelope, printed in full whatever the outcome; the command exits 0 only
// when the word completed.
type wordResult struct {
	*wasm.Result
	Word string `json:"-"`
	Dev  bool   `json:"-"`
}

func (r *wordResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.Result)
	if err != nil {
		return nil, err
	}
	// "ok" says whether the word completed, so a script reading -o json needs no second rule.
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	obj["ok"] = r.Outcome == wasm.Completed
	return json.Marshal(obj)
}

func (r *wordResult) ExitStatus() int {
	if r.Outcome == wasm.Completed {
		return 0
	}
	return 1
}

func (r *wordResult) Text(w io.Writer) {
	fmt.Fprintf(w, "%s: %s in %d ms", r.Word, r.Outcome, r.DurationMS)
	if r.Code != "" {
		fmt.Fprintf(w, ": %s: %s", r.Code, r.Message)
	}
	fmt.Fprintln(w)
	if len(r.Output) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, r.Output, "  ", "  ") == nil {
			fmt.Fprintf(w, "output:\n  %s\n", pretty.String())
		}
	}
	if r.Transcript != "" {
		fmt.Fprintf(w, "transcript:\n  %s\n", strings.ReplaceAll(strings.TrimRight(r.Transcript, "\n"), "\n", "\n  "))
	}
	if len(r.Capabilities) > 0 {
		fmt.Fprintln(w, "capabilities:")
		for _, c := range r.Capabilities {
			verdict := "allowed"
			if !c.Allowed {
				verdict = "DENIED "
			}
			fmt.Fprintf(w, "  %s %s %s\n", verdict, c.Cap, c.Args)
		}
	}
}

var (
	_ cli.Texter   = (*wordResult)(nil)
	_ cli.Statuser = (*wordResult)(nil)
)
