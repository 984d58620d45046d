package drivers_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lexicon-fleet/lexicon/plane/internal/drivers"
	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/plane/internal/services"
	"github.com/lexicon-fleet/lexicon/plane/store"
	"github.com/lexicon-fleet/lexicon/plugins/cloud/digitalocean/digitaloceanfake"
	"github.com/lexicon-fleet/lexicon/plugins/cloud/hetzner/hetznerfake"
	"github.com/lexicon-fleet/lexicon/plugins/cloud/linode/linodefake"
	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/driver"
)

// received is what a provider's API was sent for the instance carrying a tag, read from the fake's
// own records, and the public IPv4 the provider gave it.
type received struct {
	userData string
	tags     []string
	addr     string
}

// providerFake is one real provider driver, run against its API fake.
type providerFake struct {
	dir                string // plugins/cloud/<dir>; released as cloud-<dir>
	region, typ, image string
	settings           func(endpoint string) string
	serve              func(t *testing.T, token string) (endpoint string, sent func(tag string) (received, bool))
}

var providerFakes = []providerFake{
	{dir: "linode", region: "us-east", typ: "g6-nanode-1", image: "linode/debian12",
		settings: func(u string) string { return fmt.Sprintf(`{"endpoint": %q}`, u) },
		serve: func(t *testing.T, token string) (string, func(string) (received, bool)) {
			f, url := linodefake.New(t, token)
			return url, func(tag string) (received, bool) {
				f.Mu.Lock()
				defer f.Mu.Unlock()
				for _, in := range f.Instances {
					if slices.Contains(in.Tags, tag) {
						// Linode takes user data base64 in metadata.user_data; the fake decoded it (and
						// refuses what is not base64).
						return received{userData: in.UserData, tags: slices.Clone(in.Tags), addr: in.IPv4[0]}, true
					}
				}
				return received{}, false
			}
		}},
	{dir: "hetzner", region: "fsn1", typ: "cx22", image: "debian-12",
		settings: func(u string) string { return fmt.Sprintf(`{"endpoint": %q, "project": "lexicon-test"}`, u) },
		serve: func(t *testing.T, token string) (string, func(string) (received, bool)) {
			f, url := hetznerfake.New(t, token)
			return url, func(tag string) (received, bool) {
				f.Mu.Lock()
				defer f.Mu.Unlock()
				for _, s := range f.Servers {
					if _, ok := s.Labels[tag]; ok {
						// Hetzner has labels, not tags: the driver makes each tag a label key.
						var tags []string
						for k := range s.Labels {
							tags = append(tags, k)
						}
						ip := f.IPs[s.IPv4]
						if ip == nil {
							return received{}, false
						}
						return received{userData: s.UserData, tags: tags, addr: ip.IP}, true
					}
				}
				return received{}, false
			}
		}},
	{dir: "digitalocean", region: "nyc3", typ: "s-1vcpu-1gb", image: "debian-12-x64",
		settings: func(u string) string { return fmt.Sprintf(`{"endpoint": %q}`, u) },
		serve: func(t *testing.T, token string) (string, func(string) (received, bool)) {
			f, url := digitaloceanfake.New(t, token)
			return url, func(tag string) (received, bool) {
				f.Mu.Lock()
				defer f.Mu.Unlock()
				for _, d := range f.Droplets {
					if slices.Contains(d.Tags, tag) {
						return received{userData: d.UserData, tags: slices.Clone(d.Tags), addr: d.IPv4}, true
					}
				}
				return received{}, false
			}
		}},
}

// providerBins builds the three provider drivers, with their real manifests, for the tests that need
// them (only those pay for the build).
var providerBins = sync.OnceValue(func() error {
	for _, p := range providerFakes {
		name := "cloud-" + p.dir
		raw, err := os.ReadFile(filepath.Join(root, "plugins", "cloud", p.dir, "manifest.json"))
		if err != nil {
			return err
		}
		out := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./plugins/cloud/"+p.dir)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s: %v\n%s", p.dir, err, msg)
		}
		manifests[name], bins[name] = string(raw), out
	}
	return nil
})

// TestProvisioningAgainstProviderFakes runs the provisioning engine through the plane's driver manager
// and each real provider driver (a go-plugin process) against that provider's API fake, up to the
// join: the instance is created with the provisioning's user data and tag as the provider's API takes
// them, the fake reports its address, and the agent's join from that address (with the token found in
// the user data) is approved by the provider check; a join from an address the provider does not
// report for the instance waits for a person.
func TestProvisioningAgainstProviderFakes(t *testing.T) {
	must(t, providerBins())
	for _, p := range providerFakes {
		t.Run(p.dir, func(t *testing.T) {
			const token = "provider-api-token-5b1d0c9e"
			endpoint, sent := p.serve(t, token)
			f := newFixture(t, "")
			agent := []byte("\x7fELF pretend agent for " + p.dir)
			f.publishWith([]store.ArtifactPut{{Name: "agent/linux-amd64", Digest: cas.Sum(agent), Data: agent}}, "cloud-"+p.dir)
			_, err := f.m.Enable(f.ctx, "alice", "cloud-"+p.dir, false)
			must(t, err)
			_, err = f.m.AccountAdd(f.ctx, "alice", drivers.AccountAddRequest{Driver: "cloud-" + p.dir, Name: "acct",
				Settings: json.RawMessage(p.settings(endpoint)), Credential: driver.NewSecret(token)})
			must(t, err)

			e := &provision.Engine{Store: f.st, Cloud: drivers.ProvisionCloud{M: f.m}, EngineBase: services.EngineBase{Holder: "replica-a"},
				Bootstrap: provision.Bootstrap{PlaneURL: "https://plane.example:8443"}}
			prov := func(name string) store.Provisioning {
				pr, err := e.Provision(f.ctx, "admin", provision.Request{Name: name, Account: "acct", Region: p.region, Type: p.typ,
					Image: p.image, Labels: map[string]string{"role": "web"}})
				must(t, err)
				return pr
			}
			get := func(id string) store.Provisioning {
				pr, err := f.st.ProvisioningGet(f.ctx, store.ProvisioningGetParams{ID: id})
				must(t, err)
				return pr
			}
			// passes runs engine passes until the provisioning reaches want; the fakes boot an instance
			// when it is next read, so a few passes suffice.
			passes := func(id string, want store.ProvisioningState) store.Provisioning {
				t.Helper()
				var pr store.Provisioning
				for range 6 {
					must(t, e.Pass(f.ctx))
					if pr = get(id); pr.State == want {
						return pr
					}
				}
				t.Fatalf("provisioning is %s (%s), want %s; timeline %+v", pr.State, pr.Reason, want, pr.Events)
				return pr
			}
			good, bad := prov("web-1"), prov("web-2")
			good = passes(good.ID, store.ProvInstalling)
			bad = passes(bad.ID, store.ProvInstalling)

			join := func(pr store.Provisioning, source string) store.Join {
				t.Helper()
				got, ok := sent(pr.Tag)
				if !ok {
					t.Fatalf("%s: the provider has no instance carrying %s (or no address for it)", pr.Name, pr.Tag)
				}
				if !slices.Contains(got.tags, pr.Tag) {
					t.Fatalf("%s: the provider was sent tags %v, not %s", pr.Name, got.tags, pr.Tag)
				}
				if !slices.Contains(pr.Addresses, got.addr) {
					t.Fatalf("%s: the record holds %v, the provider reports %s", pr.Name, pr.Addresses, got.addr)
				}
				tok := provisionToken(t, got.userData)
				if source == "" {
					source = got.addr
				}
				pub := keys.NewNode().Public()
				res, err := provision.Join(f.ctx, f.st, tok, store.JoinCreateParams{Name: pr.Name, Key: pub.String(), Fingerprint: pub.Fingerprint(),
					Addresses: []string{source}, SourceAddress: source, Now: time.Now().UTC()})
				must(t, err)
				if res.Join.Status != store.JoinPending || res.Join.ProvisioningID != pr.ID {
					t.Fatalf("%s: join %+v", pr.Name, res.Join)
				}
				return res.Join
			}
			const elsewhere = "100.64.7.7" // no fake gives out an address in the shared range
			goodJoin, badJoin := join(good, ""), join(bad, elsewhere)

			good = passes(good.ID, store.ProvJoined)
			j, err := f.st.JoinGet(f.ctx, store.JoinGetParams{ID: goodJoin.ID})
			must(t, err)
			if j.Status != store.JoinApproved || j.DecidedBy != provision.Actor(good.ID) {
				t.Fatalf("the join from the reported address: %+v", j)
			}
			n, err := f.st.NodeGet(f.ctx, store.NodeGetParams{ID: good.NodeID})
			must(t, err)
			if n.Name != "web-1" || n.Labels["role"] != "web" {
				t.Fatalf("node %+v", n)
			}

			bad = get(bad.ID)
			if bad.State != store.ProvJoining || !strings.Contains(bad.Reason, elsewhere) {
				t.Fatalf("the join from elsewhere: provisioning %s (%s)", bad.State, bad.Reason)
			}
			j, err = f.st.JoinGet(f.ctx, store.JoinGetParams{ID: badJoin.ID})
			must(t, err)
			if j.Status != store.JoinPending || !strings.Contains(j.HoldReason, "does not report") {
				t.Fatalf("the join from elsewhere: %+v", j)
			}
		})
	}
}

// provisionToken reads the one-time token from user data as cloud-init would write it.
func provisionToken(t *testing.T, userData string) string {
	t.Helper()
	if !strings.HasPrefix(userData, "#cloud-config\n") {
		t.Fatalf("the provider was sent user data that is not cloud-config: %.60q", userData)
	}
	var cc struct {
		WriteFiles []struct{ Path, Content string } `yaml:"write_files"`
	}
	if err := yaml.Unmarshal([]byte(userData), &cc); err != nil {
		t.Fatalf("the user data is not YAML: %v", err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == provision.TokenFile {
			return strings.TrimSpace(f.Content)
		}
	}
	t.Fatal("the user data carries no token file")
	return ""
}
