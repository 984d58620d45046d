package vocab_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab/vocabtest"
	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/checkpoint"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/statement"
	"github.com/lexicon-fleet/lexicon/registry/tlog"
	"github.com/lexicon-fleet/lexicon/registry/tlog/tlogtest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

var (
	restartUnit = vocabtest.Module{Manifest: root + "primitives/restart_unit/manifest.json", File: root + "build/wasm/restart_unit.wasm"}
	fileHead    = vocabtest.Module{Manifest: root + "primitives/file_head/manifest.json", File: root + "build/wasm/file_head.wasm"}
)

// served is a test log over HTTP with a reader of it.
type served struct {
	*tlogtest.Log
	url    string
	reader *tlog.Reader
}

func serve(t *testing.T, l *tlogtest.Log) served {
	t.Helper()
	srv := l.Server()
	t.Cleanup(srv.Close)
	return served{Log: l, url: srv.URL, reader: &tlog.Reader{URL: srv.URL, Log: l.PublicKey()}}
}

// logIn adds the release's statement to the log, as lexicon-release log does.
func logIn(t *testing.T, rel vocabtest.Release, l served) {
	t.Helper()
	path := filepath.Join(rel.Dir, registry.BundleFile)
	data, err := os.ReadFile(path)
	must(t, err)
	b, err := statement.ParseBundle(data)
	must(t, err)
	st, err := statement.Decode(b.GetDsseEnvelope().Payload)
	must(t, err)
	must(t, tlog.Add(context.Background(), l.url, b, st.Predicate.Publisher))
	out, err := statement.MarshalBundle(b)
	must(t, err)
	must(t, os.WriteFile(path, out, 0o644))
}

// holdLogKey puts the log's key in the node's trust folder.
func holdLogKey(t *testing.T, trust string, l served) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(trust, "log_keys"), 0o755))
	must(t, keys.WritePublic(filepath.Join(trust, "log_keys", "test.pub"), l.PublicKey().String()))
}

// plane serves a release as the plane's artifact route does, proofs included: it fetches them from
// the log it reads, whichever history that log shows it (nil: it has none to serve).
type plane struct {
	vocabtest.Release
	log *tlog.Reader
}

func (p plane) Artifact(ctx context.Context, q url.Values, limit int64) ([]byte, error) {
	if !q.Has("log_proof") {
		return p.Release.Artifact(ctx, q, limit)
	}
	if p.log == nil {
		return nil, errcode.New(errcode.LogUnavailable, "this plane reads no log")
	}
	old, _ := strconv.ParseUint(q.Get("old"), 10, 64)
	new, _ := strconv.ParseUint(q.Get("new"), 10, 64)
	proof, err := p.log.Prove(ctx, old, new)
	if err != nil {
		return nil, err
	}
	return json.Marshal(proof)
}

// TestNodeRefusesSplitView: a node that took release 2 in one history of the log refuses release 3
// logged in another history under the same log key, with the proof the other history serves and
// without one. It keeps its vocabulary and its checkpoint, and says why.
func TestNodeRefusesSplitView(t *testing.T) {
	lg := serve(t, tlogtest.New("log.lexicon.test"))
	rel1 := vocabtest.Build(t, restartUnit)
	logIn(t, rel1, lg)
	holdLogKey(t, rel1.Trust, lg)
	modules := filepath.Join(t.TempDir(), "modules")
	v, err := vocab.Open(rel1.Trust, modules, nil)
	must(t, err)
	must(t, v.Sync(context.Background(), plane{rel1, lg.reader}, channel.StatementRef{}))
	if cps := v.Checkpoints(); len(cps) != 1 || cps[0].Size != 1 || cps[0].Origin != "log.lexicon.test" {
		t.Fatalf("checkpoints %+v", cps)
	}

	fork := serve(t, lg.Fork())
	must(t, fork.AppendLeaf([]byte("shown to other nodes only")))
	rel2 := rel1.Next(t, vocabtest.Options{}, fileHead)
	logIn(t, rel2, lg)
	must(t, v.Sync(context.Background(), plane{rel2, lg.reader}, channel.StatementRef{}))
	held := v.Checkpoints()
	if v.Ref().Sequence != 2 || len(held) != 1 || held[0].Size != 2 {
		t.Fatalf("release 2: %+v %+v", v.Ref(), held)
	}

	rel3 := rel2.Next(t, vocabtest.Options{}, restartUnit)
	logIn(t, rel3, fork)
	for _, c := range []struct {
		name   string
		log    *tlog.Reader
		reason string
	}{
		{"with the forked history's own proof", fork.reader, checkpoint.ReasonProofInvalid},
		{"with no proof to be had", nil, checkpoint.ReasonNoProof},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := v.Sync(context.Background(), plane{rel3, c.log}, channel.StatementRef{})
			testkit.WantCode(t, err, errcode.StatementLogInconsistent)
			if got := errcode.From(err, "").Details[errcode.DetailReason]; got != c.reason {
				t.Fatalf("reason %v: %v", got, err)
			}
			if v.Ref().Sequence != 2 || !hasWords(v, "file_head") || !strings.HasPrefix(v.Untrusted(), errcode.StatementLogInconsistent) {
				t.Fatalf("after the refusal: %+v %+v %q", v.Ref(), v.Report(), v.Untrusted())
			}
			if got := v.Checkpoints(); len(got) != 1 || got[0] != held[0] {
				t.Fatalf("checkpoints moved: %+v", got)
			}
		})
	}
	// The reason names the plane's answer when it had no proof.
	_ = v.Sync(context.Background(), plane{rel3, nil}, channel.StatementRef{})
	if !strings.Contains(v.Untrusted(), "asking the plane for the proof") {
		t.Fatalf("untrusted %q", v.Untrusted())
	}
	// A restart keeps the view: the held checkpoint is the node's, not the process's.
	again, err := vocab.Open(rel1.Trust, modules, nil)
	must(t, err)
	if got := again.Checkpoints(); again.Ref().Sequence != 2 || len(got) != 1 || got[0] != held[0] {
		t.Fatalf("restarted on %+v holding %+v", again.Ref(), got)
	}
	testkit.WantCode(t, again.Sync(context.Background(), plane{rel3, fork.reader}, channel.StatementRef{}), errcode.StatementLogInconsistent)
}

// TestNodeRefusesRolledBackLog: a node holding the log at size 5 refuses a statement logged after the
// log lost entries and grew again from size 1, though that history is long enough to have a size 5.
func TestNodeRefusesRolledBackLog(t *testing.T) {
	lg := serve(t, tlogtest.New("log.lexicon.test"))
	rel1 := vocabtest.Build(t, restartUnit)
	logIn(t, rel1, lg)
	holdLogKey(t, rel1.Trust, lg)
	rolled := serve(t, lg.Fork())
	for _, leaf := range []string{"a", "b", "c", "d"} {
		must(t, lg.AppendLeaf([]byte(leaf)))
	}
	rel2 := rel1.Next(t, vocabtest.Options{}, fileHead)
	logIn(t, rel2, lg) // size 6
	v, err := vocab.Open(rel1.Trust, filepath.Join(t.TempDir(), "modules"), nil)
	must(t, err)
	must(t, v.Sync(context.Background(), plane{rel2, lg.reader}, channel.StatementRef{}))

	rel3 := rel2.Next(t, vocabtest.Options{}, restartUnit)
	logIn(t, rel3, rolled) // size 2, smaller than the 6 held
	for _, leaf := range []string{"w", "x", "y", "z"} {
		must(t, rolled.AppendLeaf([]byte(leaf)))
	}
	err = v.Sync(context.Background(), plane{rel3, rolled.reader}, channel.StatementRef{})
	testkit.WantCode(t, err, errcode.StatementLogInconsistent)
	if got := errcode.From(err, "").Details; got[errcode.DetailTreeSize] != uint64(2) || got[errcode.DetailHeldSize] != uint64(6) {
		t.Fatalf("details %v", got)
	}
	if v.Ref().Sequence != 2 || v.Checkpoints()[0].Size != 6 {
		t.Fatalf("after the refusal: %+v %+v", v.Ref(), v.Checkpoints())
	}
}

// TestKilledAfterSwitchVerifiesWithKeptProof: a node killed between pointing current at a statement
// logged under a newer checkpoint and holding that checkpoint restarts offline on it: the proof it
// was verified with is kept beside it. The release comes from a folder, with the proofs
// lexicon-release prove writes.
func TestKilledAfterSwitchVerifiesWithKeptProof(t *testing.T) {
	if env := os.Getenv(crashEnv); env != "" {
		dirs := strings.Split(env, "\n")
		v, err := vocab.Open(dirs[0], dirs[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		vocab.SetAfterSwitch(v, func() { os.Exit(killedExit) })
		err = v.Sync(context.Background(), vocab.Dir(dirs[2]), channel.StatementRef{})
		t.Fatalf("sync finished (%v) without reaching the kill", err)
	}
	lg := serve(t, tlogtest.New("log.lexicon.test"))
	first := vocabtest.Build(t, restartUnit)
	logIn(t, first, lg)
	holdLogKey(t, first.Trust, lg)
	modules := filepath.Join(t.TempDir(), "modules")
	v, err := vocab.Open(first.Trust, modules, nil)
	must(t, err)
	must(t, v.Sync(context.Background(), vocab.Dir(first.Dir), channel.StatementRef{}))
	next := first.Next(t, vocabtest.Options{}, fileHead)
	must(t, lg.AppendLeaf([]byte("someone else's entry")))
	logIn(t, next, lg) // size 3

	// Without the proofs file the folder cannot prove the step, and the node refuses it.
	err = v.Sync(context.Background(), vocab.Dir(next.Dir), channel.StatementRef{})
	testkit.WantCode(t, err, errcode.StatementLogInconsistent)
	p, err := lg.reader.Prove(context.Background(), 1, 3)
	must(t, err)
	data, err := json.Marshal([]checkpoint.Proof{p})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(next.Dir, registry.LogProofsFile), data, 0o644))

	child := exec.Command(os.Args[0], "-test.run=^TestKilledAfterSwitchVerifiesWithKeptProof$")
	child.Env = append(os.Environ(), crashEnv+"="+first.Trust+"\n"+modules+"\n"+next.Dir)
	out, err := child.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != killedExit {
		t.Fatalf("child: %v\n%s", err, out)
	}
	must(t, os.RemoveAll(next.Dir)) // offline from here: nothing to fetch a proof from

	restarted, err := vocab.Open(first.Trust, modules, nil)
	must(t, err)
	if got := restarted.Ref(); got.Sequence != 2 || !hasWords(restarted, "file_head") || restarted.Untrusted() != "" {
		t.Fatalf("restarted on %+v, untrusted %q", got, restarted.Untrusted())
	}
	if cps := restarted.Checkpoints(); len(cps) != 1 || cps[0].Size != 3 {
		t.Fatalf("the restart did not hold the new checkpoint: %+v", cps)
	}
	held, err := os.Stat(filepath.Join(modules, "checkpoints"))
	must(t, err)
	if held.Mode().Perm() != 0o600 {
		t.Fatalf("held checkpoints mode %v", held.Mode())
	}
}
