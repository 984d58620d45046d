// Package policy is the node's own say over what it runs: which word classes it accepts, and the names
// it calls its own. It lives in policy.json in the agent's config folder and is trusted like a key
// file; a policy that is missing, malformed or writable by others makes the node accept nothing.
//
//	{
//	  "classes": {"look": "accept", "change": "accept", "destructive": "refuse"},
//	  "names": ["www.example.com", "example.com:8443"],
//	  "renewal": {"path": "/usr/bin/certbot", "sha256": "<64 hex digits>", "args": ["renew", "--quiet"]},
//	  "update": "off",
//	  "converge": {"paths": ["/etc/nginx", "/srv/www"], "units": ["nginx.service"], "users": ["web"],
//	               "groups": ["www-data"], "sysctl": ["net.ipv4.*"], "packages": ["nginx"], "firewall": true,
//	               "max_file_bytes": 1048576},
//	  "packages": {"operations": ["query", "restarts", "refresh", "upgrade", "ensure", "repair"],
//	               "origins": ["origin=Debian,label=Debian-Security"], "names": ["*"]},
//	  "backup": {"paths": ["/srv/app"], "restore_paths": ["/srv/restore"], "databases": ["app"],
//	             "postgres": {"bin": "/usr/lib/postgresql/15/bin", "host": "127.0.0.1", "user": "postgres"}}
//	}
//
// update "off" stops the agent from updating itself from the release (its owner updates it by other
// means); "on", or no update key, lets it.
//
// renewal is the certificate renewal program this node runs when cert_expiry fails, pinned by the
// sha256 of its bytes; without it cert_expiry only checks.
//
// converge is what the converge word may touch here (sdk/footprint.Bounds): the folders it may write
// files beneath, the units, users, groups, sysctl keys and packages it may manage (path.Match
// patterns), whether the inbound firewall is Lexicon's, and the largest file. Without it converge
// touches nothing. Whatever it says, converge never writes beneath the agent's own config and state
// folders. The word host reads it again for every converge, so narrowing it takes effect without a
// restart.
//
// packages narrows what words may do with the package manager (the pkg.* capabilities): which
// operations (ensure is converge's install, version and removal, which converge's packages bound
// further), which archives an upgrade or ensure may install from (origin patterns), which package names
// they may touch. Each list given narrows what a word's signed manifest allows and never widens it; a list
// left out leaves that bound to the manifest, and an empty one allows nothing.
//
// backup is what may leave this machine in a backup and where a restore may write (backup.Policy):
// the plane's backup policy chooses among these paths and databases and can never widen them; without
// it the node backs up nothing (backup.not_configured).
package policy

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/go-json-experiment/json"

	"github.com/lexicon-fleet/lexicon/backup"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
)

// FileName is the policy's name in the config folder.
const FileName = "policy.json"

// Decisions for a class.
const (
	Accept = "accept"
	Refuse = "refuse"
)

// Policy is a loaded policy. The zero Policy accepts nothing.
type Policy struct {
	Classes map[manifest.Class]string `json:"classes"`
	// Names are the node's own host names (host or host:port): what "@self" means in a manifest.
	Names []string `json:"names,omitempty"`
	// Renewal is the program a repair word's exec.pinned "@renewal" runs (manifest.NodeRenewal); nil
	// means none is configured and such a repair does not run.
	Renewal *manifest.NodeProgram `json:"renewal,omitempty"`
	// Update is "off" when the agent must not update itself; "" and "on" let it.
	Update string `json:"update,omitempty"`
	// Converge bounds the footprint capabilities; nil lets them touch nothing.
	Converge *footprint.Bounds `json:"converge,omitempty"`
	// Packages narrows the pkg.* capabilities; nil narrows nothing beyond each word's manifest.
	Packages *manifest.NodePackages `json:"packages,omitempty"`
	// Backup is what backups may read and restores may write on this node; nil: no backups.
	Backup *backup.Policy `json:"backup,omitempty"`

	// problem is why the policy accepts nothing, when it could not be loaded.
	problem error
}

// Load reads the policy at path. It never fails: a policy that cannot be trusted or read is a policy
// that accepts nothing, and Check says why.
func Load(path string) *Policy {
	data, err := keys.ReadTrusted(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Policy{problem: errcode.New(errcode.PolicyUntrusted, "no policy at %s: this node accepts nothing until one is written", path)}
		}
		return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s cannot be trusted, so this node accepts nothing", path)}
	}
	var p Policy
	if err := json.Unmarshal(data, &p, json.RejectUnknownMembers(true)); err != nil {
		return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s is not valid, so this node accepts nothing", path)}
	}
	if p.Renewal != nil {
		if err := p.Renewal.Validate(); err != nil {
			return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s: renewal is not a pinned program, so this node accepts nothing", path)}
		}
	}
	if p.Packages != nil {
		if err := p.Packages.Validate(); err != nil {
			return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s: packages is not valid, so this node accepts nothing", path)}
		}
	}
	if p.Backup != nil {
		if err := p.Backup.Validate(); err != nil {
			return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s: %s, so this node accepts nothing", path, errcode.From(err, "").Message)}
		}
	}
	if p.Update != "" && p.Update != UpdateOn && p.Update != UpdateOff {
		return &Policy{problem: errcode.New(errcode.PolicyUntrusted, "policy %s: update must be on or off, not %q", path, p.Update)}
	}
	if p.Converge != nil {
		if err := p.Converge.Validate(); err != nil {
			return &Policy{problem: errcode.Wrap(err, errcode.PolicyUntrusted, "policy %s: %s, so this node accepts nothing", path, errcode.From(err, "").Message)}
		}
	}
	for class, d := range p.Classes {
		if class.Rank() == 0 || (d != Accept && d != Refuse) {
			return &Policy{problem: errcode.New(errcode.PolicyUntrusted, "policy %s: class %q must be look, change or destructive, and accept or refuse, not %q", path, class, d)}
		}
	}
	return &p
}

// Update settings.
const (
	UpdateOn  = "on"
	UpdateOff = "off"
)

// UpdatesOff reports whether the node's owner turned self-update off. A policy that could not be
// loaded does not turn it off: a broken policy must not also pin a broken agent.
func (p *Policy) UpdatesOff() bool { return p.problem == nil && p.Update == UpdateOff }

// Problem is why the policy accepts nothing, or nil.
func (p *Policy) Problem() error { return p.problem }

// Check refuses a word whose class the node does not accept. The class is the one in the word's signed
// manifest, never the one a job names.
func (p *Policy) Check(m *manifest.Manifest) error {
	if p.problem != nil {
		return p.problem
	}
	if p.Classes[m.Class] != Accept {
		return errcode.New(errcode.PolicyRefused, "this node's policy does not accept %s words (%s)", m.Class, m.Name).
			With(errcode.DetailClass, string(m.Class))
	}
	return nil
}

// ConvergeBounds is what the footprint capabilities may touch: the policy's converge section, bounds
// that allow nothing when it has none, and the policy's problem when it cannot be trusted.
func (p *Policy) ConvergeBounds() (*footprint.Bounds, error) {
	if p.problem != nil {
		return nil, p.problem
	}
	if p.Converge == nil {
		return &footprint.Bounds{}, nil
	}
	b := *p.Converge
	return &b, nil
}

// String describes the policy for status output.
func (p *Policy) String() string {
	if p.problem != nil {
		return "accepts nothing: " + p.problem.Error()
	}
	return fmt.Sprintf("look=%s change=%s destructive=%s", or(p.Classes[manifest.ClassLook]), or(p.Classes[manifest.ClassChange]), or(p.Classes[manifest.ClassDestructive]))
}

func or(d string) string {
	if d == "" {
		return Refuse
	}
	return d
}
