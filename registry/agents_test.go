package registry_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lexicon-fleet/lexicon/registry"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

func writeAgent(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "lexicon-agent")
	must(t, os.WriteFile(p, []byte(body), 0o755))
	return p
}

// TestAgentPinsDiffAndRenew: agent binaries are pinned per platform, a diff names the platforms whose
// agent changed, and a renewal keeps every subject under a new sequence and expiry, and verifies.
func TestAgentPinsDiffAndRenew(t *testing.T) {
	f := newFixture(t)
	amd, arm := writeAgent(t, "\x7fELF amd64 v1"), writeAgent(t, "\x7fELF arm64 v1")
	oldDir := f.build(t, 1, func(o *registry.BuildOptions) {
		o.Agents = map[string]string{"linux/amd64": amd, "linux/arm64": arm}
		o.Floor = "1.0.0"
	})
	amd2 := writeAgent(t, "\x7fELF amd64 v2")
	newDir := f.build(t, 2, func(o *registry.BuildOptions) { o.Agents = map[string]string{"linux/amd64": amd2} })

	d, err := registry.DiffReleases(oldDir, newDir)
	must(t, err)
	want := []registry.DiffAgent{
		{Platform: "linux-amd64", From: sum("\x7fELF amd64 v1"), To: sum("\x7fELF amd64 v2")},
		{Platform: "linux-arm64", From: sum("\x7fELF arm64 v1")},
	}
	if !reflect.DeepEqual(d.Agents, want) {
		t.Fatalf("agents diff %+v, want %+v", d.Agents, want)
	}

	renewed := filepath.Join(t.TempDir(), "renewed")
	res, err := registry.Renew(registry.RenewOptions{Key: f.key, PreviousDir: oldDir, Sequence: 3, Expires: time.Hour, OutDir: renewed, Now: now})
	must(t, err)
	if res.Sequence != 3 || !res.ExpiresAt.Equal(now.UTC().Truncate(time.Second).Add(time.Hour)) {
		t.Fatalf("renewal %+v", res)
	}
	rel, _, err := verifyDir(t, f.trustDir, renewed)
	must(t, err)
	if got := rel.Agents(); len(got) != 2 || got[0].SHA256 != sum("\x7fELF amd64 v1") || rel.Floor() != "1.0.0" {
		t.Fatalf("renewed agents %+v floor %q", got, rel.Floor())
	}
	if d, err := registry.DiffReleases(oldDir, renewed); err != nil || len(d.Agents)+len(d.Changed)+len(d.Added)+len(d.Removed) != 0 {
		t.Fatalf("a renewal changed something: %+v %v", d, err)
	}
	_, err = registry.Renew(registry.RenewOptions{Key: f.key, PreviousDir: renewed, Sequence: 3, OutDir: filepath.Join(t.TempDir(), "r")})
	testkit.WantCode(t, err, errcode.StatementRollback)
}

func sum(s string) string { return cas.Sum([]byte(s)) }
