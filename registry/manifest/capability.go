package manifest

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lexicon-fleet/lexicon/registry/cas"
)

// Capability is one door a module may use, with the bounds that fence it. Which bounds a capability
// takes is fixed by CapabilitiesV1; bounds a capability does not take are refused.
type Capability struct {
	Cap string `json:"cap"`
	// Paths are absolute roots (fs.*, sys.disk). A path is reachable only beneath one of them.
	Paths []string `json:"paths,omitempty"`
	// Units are unit-name patterns in path.Match syntax (systemd.*, journal.read).
	Units []string `json:"units,omitempty"`
	// Hosts are host or host:port names (net.http, tls.peer). SelfHost stands for the node's own
	// names as its local configuration lists them.
	Hosts []string `json:"hosts,omitempty"`
	// Programs are the only programs exec.pinned may run.
	Programs []Program `json:"programs,omitempty"`
	// Patterns are base-name patterns in path.Match syntax (fs.remove): only a file whose name matches
	// one may be removed.
	Patterns []string `json:"patterns,omitempty"`
	// Names are name patterns in path.Match syntax: user and group names (account.*), sysctl keys
	// (sysctl.*).
	Names []string `json:"names,omitempty"`
	// MinAgeS is how old, by modification time, a file must be before fs.remove may remove it.
	MinAgeS int64 `json:"min_age_s,omitempty"`
	// MinBytes is the smallest size journal.vacuum may shrink the journal to.
	MinBytes int64 `json:"min_bytes,omitempty"`
	// Origins are the archives pkg.upgrade and pkg.ensure may install from, as origin patterns
	// ("origin=Debian,label=Debian-Security"; see ParseOriginPattern).
	Origins []string `json:"origins,omitempty"`
	// Packages are package-name patterns in path.Match syntax (pkg.upgrade, pkg.ensure): every
	// package an upgrade installs or replaces, or pkg.ensure installs, replaces or removes, must match one.
	Packages []string `json:"packages,omitempty"`
	// MaxBytes caps what one call may read, write or fetch.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// TimeoutMS caps one call's time (net.http, tls.peer, exec.pinned).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// MinJournalBytes is the smallest journal.vacuum floor a manifest may declare (16 MiB), so no signed word
// can vacuum the journal to nothing.
const MinJournalBytes = 16 << 20

// SelfHost in Hosts means "the node's own names", which the node's configuration supplies, so one signed
// word can probe each node's own site without naming every site in the release.
const SelfHost = "@self"

// Program is a program exec.pinned may run: its absolute path, the sha256 its bytes must have (pinned
// because the manifest is pinned by the statement), and a JSON Schema its argument array must satisfy.
type Program struct {
	Path   string          `json:"path"`
	SHA256 string          `json:"sha256"`
	Args   json.RawMessage `json:"args"`
}

// NodeRenewal as a Program's path stands for the certificate renewal program the node's own policy
// names and pins by sha256 (certbot renew, a site's own script): one signed repair word can renew on
// every node that has configured one, and on the others exec.pinned answers capability.unknown. Its
// SHA256 is left empty in the manifest; the Args schema still bounds what the word may add.
const NodeRenewal = "@renewal"

// NodeProgram is a program the node's local configuration pins for a NodeRenewal entry: an absolute
// path, the sha256 its bytes must have, and fixed arguments put before any the word passes.
type NodeProgram struct {
	Path   string   `json:"path"`
	SHA256 string   `json:"sha256"`
	Args   []string `json:"args,omitempty"`
}

// Validate checks the program's path is absolute and clean, its sha256 is 64 lowercase hex digits, and
// it has at most 32 arguments of at most 4096 bytes each.
func (p NodeProgram) Validate() error {
	if !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path {
		return invalid("path", "program path %q must be absolute and clean", p.Path)
	}
	if !cas.ValidDigest(p.SHA256) {
		return invalid("sha256", "program sha256 must be 64 lowercase hex digits")
	}
	if len(p.Args) > 32 {
		return invalid("args", "at most 32 arguments")
	}
	for _, a := range p.Args {
		if len(a) > 4096 {
			return invalid("args", "an argument is over 4096 bytes")
		}
	}
	return nil
}

// ArgsSchema compiles the schema the program's argument array must satisfy, for a host that checks
// each call. Parse has already compiled it once, so it only fails on a Program built by hand.
func (p Program) ArgsSchema() (*jsonschema.Schema, error) {
	return compileSchema("args", p.Args)
}

// bound is a bit set of the bounds a capability takes.
type bound uint16

const (
	bPaths bound = 1 << iota
	bUnits
	bHosts
	bPrograms
	bMaxBytes
	bTimeout
	bPatterns
	bMinAge
	bMinBytes
	bOrigins
	bPackages
	bNames
)

// capSpec says which bounds a capability takes, which it needs, and the lowest word class it needs.
type capSpec struct {
	allowed, required bound
	minClass          Class
}

// CapabilitiesV1 is the whole capability vocabulary of lexicon_v1.
var capabilitiesV1 = map[string]capSpec{
	"fs.read":              {allowed: bPaths | bMaxBytes, required: bPaths},
	"fs.stat":              {allowed: bPaths, required: bPaths},
	"fs.list":              {allowed: bPaths | bMaxBytes, required: bPaths},
	"fs.write":             {allowed: bPaths | bMaxBytes, required: bPaths, minClass: ClassChange},
	"fs.remove":            {allowed: bPaths | bPatterns | bMinAge, required: bPaths | bPatterns, minClass: ClassChange},
	"sys.facts":            {},
	"sys.disk":             {allowed: bPaths},
	"systemd.unit":         {allowed: bUnits, required: bUnits},
	"systemd.restart":      {allowed: bUnits, required: bUnits, minClass: ClassChange},
	"systemd.reset_failed": {allowed: bUnits, required: bUnits, minClass: ClassChange},
	"journal.read":         {allowed: bUnits | bMaxBytes, required: bUnits},
	"journal.vacuum":       {allowed: bMinBytes, required: bMinBytes, minClass: ClassChange},
	"systemd.enable":       {allowed: bUnits, required: bUnits, minClass: ClassChange},
	"net.http":             {allowed: bHosts | bMaxBytes | bTimeout, required: bHosts},
	"tls.peer":             {allowed: bHosts | bTimeout, required: bHosts},
	"exec.pinned":          {allowed: bPrograms | bMaxBytes | bTimeout, required: bPrograms, minClass: ClassChange},
	"pkg.query":            {allowed: bMaxBytes},
	"pkg.restarts":         {},
	"pkg.refresh":          {allowed: bTimeout, minClass: ClassChange},
	"pkg.upgrade":          {allowed: bOrigins | bPackages | bTimeout, required: bOrigins | bPackages, minClass: ClassChange},
	"pkg.repair":           {allowed: bTimeout, minClass: ClassChange},
	"pkg.ensure":           {allowed: bOrigins | bPackages | bTimeout, required: bOrigins | bPackages, minClass: ClassChange},
	// The footprint capabilities (sdk/word/capv1/footprint.go). Those that change the machine are bounded
	// by the node's policy as well as by these bounds.
	"artifact.fetch":   {allowed: bMaxBytes, minClass: ClassChange},
	"fs.digest":        {allowed: bPaths | bMaxBytes, required: bPaths},
	"fs.diff":          {allowed: bPaths | bMaxBytes, required: bPaths},
	"fs.install":       {allowed: bPaths | bMaxBytes, required: bPaths, minClass: ClassChange},
	"account.read":     {allowed: bNames, required: bNames},
	"account.ensure":   {allowed: bNames, required: bNames, minClass: ClassChange},
	"nft.read":         {},
	"nft.apply":        {minClass: ClassChange},
	"sysctl.read":      {allowed: bNames, required: bNames},
	"sysctl.apply":     {allowed: bNames, required: bNames, minClass: ClassChange},
	"systemd.ensure":   {allowed: bUnits, required: bUnits, minClass: ClassChange},
	"footprint.check":  {},
	"footprint.read":   {},
	"footprint.record": {minClass: ClassChange},
	// Backups: what they may read, dump and write is the node policy's to say as well; a run sends
	// data off the machine, so even reading is a change word's, and a restore is a destructive one's.
	"backup.begin":    {minClass: ClassChange},
	"backup.paths":    {allowed: bPaths, required: bPaths, minClass: ClassChange},
	"backup.database": {minClass: ClassChange},
	"backup.commit":   {minClass: ClassChange},
	"backup.verify":   {minClass: ClassChange},
	"backup.restore":  {allowed: bPaths, required: bPaths, minClass: ClassDestructive},
}

// KnownCapability reports whether name is a capability of lexicon_v1 a manifest may declare.
func KnownCapability(name string) bool {
	_, ok := capabilitiesV1[name]
	return ok
}

func (c Capability) has() bound {
	var b bound
	if len(c.Paths) > 0 {
		b |= bPaths
	}
	if len(c.Units) > 0 {
		b |= bUnits
	}
	if len(c.Hosts) > 0 {
		b |= bHosts
	}
	if len(c.Programs) > 0 {
		b |= bPrograms
	}
	if c.MaxBytes != 0 {
		b |= bMaxBytes
	}
	if c.TimeoutMS != 0 {
		b |= bTimeout
	}
	if len(c.Patterns) > 0 {
		b |= bPatterns
	}
	if c.MinAgeS != 0 {
		b |= bMinAge
	}
	if c.MinBytes != 0 {
		b |= bMinBytes
	}
	if len(c.Origins) > 0 {
		b |= bOrigins
	}
	if len(c.Packages) > 0 {
		b |= bPackages
	}
	if len(c.Names) > 0 {
		b |= bNames
	}
	return b
}

var boundNames = []struct {
	b    bound
	name string
}{{bPaths, "paths"}, {bUnits, "units"}, {bHosts, "hosts"}, {bPrograms, "programs"}, {bMaxBytes, "max_bytes"}, {bTimeout, "timeout_ms"},
	{bPatterns, "patterns"}, {bMinAge, "min_age_s"}, {bMinBytes, "min_bytes"}, {bNames, "names"},
	{bOrigins, "origins"}, {bPackages, "packages"}}

func (m *Manifest) validateCapabilities() error {
	seen := map[string]bool{}
	for i, c := range m.Capabilities {
		field := fmt.Sprintf("capabilities[%d]", i)
		spec, ok := capabilitiesV1[c.Cap]
		if !ok {
			return invalid(field+".cap", "capability %q is not in lexicon_v1", c.Cap)
		}
		if seen[c.Cap] {
			return invalid(field+".cap", "capability %q is declared twice", c.Cap)
		}
		seen[c.Cap] = true
		has := c.has()
		for _, bn := range boundNames {
			if has&bn.b != 0 && spec.allowed&bn.b == 0 {
				return invalid(field+"."+bn.name, "%s takes no %s", c.Cap, bn.name)
			}
			if spec.required&bn.b != 0 && has&bn.b == 0 {
				return invalid(field+"."+bn.name, "%s needs %s", c.Cap, bn.name)
			}
		}
		if spec.minClass != "" && m.Kind == KindWord && m.Class.Rank() < spec.minClass.Rank() {
			return invalid(field+".cap", "%s needs class %s or above, the word is %s", c.Cap, spec.minClass, m.Class)
		}
		if m.Kind == KindRecipe && spec.minClass != "" {
			return invalid(field+".cap", "a recipe's check only looks; %s changes the machine and belongs to its repair word", c.Cap)
		}
		if c.MaxBytes < 0 || c.TimeoutMS < 0 || c.MinAgeS < 0 || c.MinBytes < 0 {
			return invalid(field, "bounds must not be negative")
		}
		if c.TimeoutMS > MaxWallTime.Milliseconds() {
			return invalid(field+".timeout_ms", "timeout_ms is over %s", MaxWallTime)
		}
		for j, p := range c.Paths {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return invalid(fmt.Sprintf("%s.paths[%d]", field, j), "path %q must be absolute and clean", p)
			}
		}
		for j, u := range c.Units {
			if _, err := path.Match(u, ""); err != nil || u == "" || strings.ContainsAny(u, "/ ") {
				return invalid(fmt.Sprintf("%s.units[%d]", field, j), "unit pattern %q is not a valid pattern", u)
			}
		}
		for j, n := range c.Names {
			if _, err := path.Match(n, ""); err != nil || n == "" || strings.ContainsAny(n, "/ ") {
				return invalid(fmt.Sprintf("%s.names[%d]", field, j), "name pattern %q is not a valid pattern", n)
			}
		}
		for j, p := range c.Patterns {
			// A base-name pattern: no folder separator (so it cannot reach into a sub-folder by itself),
			// and not one that matches every name, which would make the bound no bound.
			if _, err := path.Match(p, ""); err != nil || p == "" || strings.Contains(p, "/") || p == "*" {
				return invalid(fmt.Sprintf("%s.patterns[%d]", field, j), "pattern %q is not a base-name pattern narrower than *", p)
			}
		}
		if c.MinBytes != 0 && c.MinBytes < MinJournalBytes {
			return invalid(field+".min_bytes", "min_bytes must be at least %d: the journal is never vacuumed to less", MinJournalBytes)
		}
		for j, o := range c.Origins {
			if _, err := ParseOriginPattern(o); err != nil {
				return invalid(fmt.Sprintf("%s.origins[%d]", field, j), "%v", err)
			}
		}
		for j, p := range c.Packages {
			if !ValidPackagePattern(p) {
				return invalid(fmt.Sprintf("%s.packages[%d]", field, j), "package pattern %q is not a valid pattern of package names", p)
			}
		}
		for j, h := range c.Hosts {
			if !validHost(h) {
				return invalid(fmt.Sprintf("%s.hosts[%d]", field, j), "host %q is not a host or host:port", h)
			}
		}
		for j, p := range c.Programs {
			pf := fmt.Sprintf("%s.programs[%d]", field, j)
			switch {
			case p.Path == NodeRenewal && p.SHA256 != "":
				return invalid(pf+".sha256", "the node's policy pins %s; the manifest gives no sha256 for it", NodeRenewal)
			case p.Path == NodeRenewal:
			case !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path:
				return invalid(pf+".path", "program path %q must be absolute and clean", p.Path)
			case !cas.ValidDigest(p.SHA256):
				return invalid(pf+".sha256", "program sha256 must be 64 lowercase hex digits")
			}
			if len(p.Args) == 0 {
				return invalid(pf+".args", "a program needs a JSON Schema for its arguments")
			}
			if _, err := compileSchema(pf+".args", p.Args); err != nil {
				return err
			}
		}
	}
	return nil
}

func validHost(h string) bool {
	if h == SelfHost {
		return true
	}
	if h == "" || len(h) > 255 || strings.ContainsAny(h, "/@?#* \t") {
		return false
	}
	return true
}
