package provision

import (
	_ "embed"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// agentUnit is the agent's systemd unit, a copy of agent/cmd/lexicon-agent/lexicon-agent.service
// (TestUnitIsTheAgents keeps the two the same).
//
//go:embed lexicon-agent.service
var agentUnit string

// Where the user data puts things on the new machine: the agent's own defaults.
const (
	ConfigDir   = "/etc/lexicon-agent"
	CAFile      = ConfigDir + "/plane-ca.crt"
	TokenFile   = ConfigDir + "/provision-token"
	AgentBinary = "/usr/local/bin/lexicon-agent"
	UnitFile    = "/etc/systemd/system/lexicon-agent.service"
)

// JoinWait is how long the user data's join waits for the plane's decision: the joining state's
// default timeout, within which a person decides a held join.
const JoinWait = "1h"

// AuthScheme is the Authorization scheme of the one unsigned artifact fetch a provisioned machine
// makes: its agent binary, before it has a key, proved by its one-time token.
const AuthScheme = "Lexicon-Provision"

// Bootstrap is what every provisioned machine is given besides its token: where the plane is, how to
// trust it, and the node's trust folder and policy. None of it is secret.
type Bootstrap struct {
	// PlaneURL is the plane's external URL, as agents reach it.
	PlaneURL string
	// CA is the PEM of the plane's CA, when it minted its own ("" when its certificate is publicly
	// trusted, or for a plain-HTTP test plane).
	CA string
	// Trust is the agent's trust folder, by path inside it (statement_keys/x.pub, log_keys/y.pub).
	Trust map[string]string
	// Policy is the node's policy.json.
	Policy string
}

// DefaultPolicy lets a provisioned node run look and change words and refuse destructive ones until
// its owner says otherwise.
const DefaultPolicy = `{"classes": {"look": "accept", "change": "accept", "destructive": "refuse"}}` + "\n"

// UserDataParams is one machine's user data.
type UserDataParams struct {
	Bootstrap
	Name     string // the node name it joins as
	Platform string // os-arch of the agent it fetches
	Digest   string // sha256 of that agent, from the current statement
	Token    string // the one-time join token: the only secret in the user data
}

var (
	trustPathRE = regexp.MustCompile(`^(statement_keys|log_keys)/[A-Za-z0-9._-]{1,64}\.pub$`)
	digestRE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	platformRE  = regexp.MustCompile(`^[a-z0-9]{1,16}-[a-z0-9]{1,16}$`)
)

type writeFile struct {
	Path        string `yaml:"path"`
	Permissions string `yaml:"permissions"`
	Owner       string `yaml:"owner"`
	Content     string `yaml:"content"`
}

type cloudConfig struct {
	WriteFiles []writeFile `yaml:"write_files"`
	RunCmd     [][]string  `yaml:"runcmd"`
}

// UserData builds a machine's cloud-init user data: a #cloud-config that writes the trust folder, the
// policy, the plane's CA, the agent's unit and the token file, and runs the install: fetch the agent
// for its platform from the plane's artifact route (proved by the token), check its sha256 against
// the digest the statement pins, install it, join with the token, start the service. Everything it
// interpolates is checked first (a name, URL or digest cannot break out of the script).
// prepared is what both forms of the install (cloud-init's user data, the install command's script)
// are made of, every interpolated value checked.
type prepared struct {
	base, curlCA, joinCA string
	files                []writeFile
}

// prepare checks what the install interpolates (a URL, platform, digest or token cannot break out of
// the script) and lists the files it writes: the policy, the trust folder, the CA, the unit, the token
// and its header.
func prepare(p UserDataParams) (prepared, error) {
	u, err := url.Parse(p.PlaneURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" ||
		strings.ContainsAny(p.PlaneURL, "'\"\\ \n") {
		return prepared{}, errcode.New(errcode.UsageInvalid, "the plane's external URL %q is not an http(s) URL agents can reach", p.PlaneURL)
	}
	switch {
	case !platformRE.MatchString(p.Platform):
		return prepared{}, errcode.New(errcode.UsageInvalid, "platform %q is not os-arch", p.Platform)
	case !digestRE.MatchString(p.Digest):
		return prepared{}, errcode.New(errcode.UsageInvalid, "agent digest is not 64 lowercase hex digits")
	case !LooksLikeToken(p.Token):
		return prepared{}, errcode.New(errcode.UsageInvalid, "not a provisioning token")
	}
	base := strings.TrimSuffix(p.PlaneURL, "/")
	policy := p.Policy
	if policy == "" {
		policy = DefaultPolicy
	}
	files := []writeFile{{Path: ConfigDir + "/policy.json", Permissions: "0644", Owner: "root:root", Content: policy}}
	names := make([]string, 0, len(p.Trust))
	for name := range p.Trust {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !trustPathRE.MatchString(name) {
			return prepared{}, errcode.New(errcode.UsageInvalid, "trust file %q is not statement_keys/<name>.pub or log_keys/<name>.pub", name)
		}
		files = append(files, writeFile{Path: path.Join(ConfigDir, "trust", name), Permissions: "0644", Owner: "root:root", Content: p.Trust[name]})
	}
	curlCA := ""
	joinCA := ""
	if p.CA != "" {
		files = append(files, writeFile{Path: CAFile, Permissions: "0644", Owner: "root:root", Content: p.CA})
		curlCA = " --cacert " + CAFile
		joinCA = " --ca " + CAFile
	}
	files = append(files,
		writeFile{Path: UnitFile, Permissions: "0644", Owner: "root:root", Content: agentUnit},
		// The header file curl reads and the token join reads: never on a command line, where any
		// process could see it; removed once the join is made.
		writeFile{Path: TokenFile, Permissions: "0600", Owner: "root:root", Content: p.Token + "\n"},
		writeFile{Path: TokenFile + ".header", Permissions: "0600", Owner: "root:root",
			Content: "Authorization: " + AuthScheme + " " + p.Token + "\n"},
	)
	return prepared{base: base, curlCA: curlCA, joinCA: joinCA, files: files}, nil
}

func UserData(p UserDataParams) (string, error) {
	if err := checkName(p.Name); err != nil {
		return "", err
	}
	in, err := prepare(p)
	if err != nil {
		return "", err
	}
	files := in.files
	script := strings.Join(installSteps(in.base, p.Platform, p.Digest, in.curlCA, in.joinCA, "'"+p.Name+"'"), "\n")
	doc, err := yaml.Marshal(cloudConfig{WriteFiles: files, RunCmd: [][]string{{"sh", "-c", script}}})
	if err != nil {
		return "", errcode.Wrap(err, errcode.InternalError, "user data")
	}
	out := "#cloud-config\n" + string(doc)
	if len(out) > cloud.MaxUserDataLen {
		return "", errcode.New(errcode.UsageInvalid, "user data is %d bytes, over the %d every provider takes (too many trust files?)", len(out), cloud.MaxUserDataLen)
	}
	return out, nil
}

// installSteps are the shell steps that install the agent on a machine whose files (trust folder,
// policy, CA, unit, token and its header) are written: fetch the agent binary for platform from the
// plane's artifact route, proved by the token, check it against digest (the signed release's pin),
// install it, join with the token and wait for the decision, start the service. nameArg is the join's
// name as a shell word, already quoted.
func installSteps(base, platform, digest, curlCA, joinCA, nameArg string) []string {
	return []string{
		"set -eu",
		"umask 077",
		// The agent refuses a trust folder others can write; cloud-init made these under its umask.
		"for d in " + ConfigDir + " " + ConfigDir + "/trust " + ConfigDir + "/trust/statement_keys " + ConfigDir +
			"/trust/log_keys; do if [ -d \"$d\" ]; then chown root:root \"$d\"; chmod 0755 \"$d\"; fi; done",
		"tmp=$(mktemp)",
		fmt.Sprintf("curl -fsS --retry 20 --retry-delay 3 --retry-all-errors%s -H @%s.header -o \"$tmp\" '%s%s?agent=%s'",
			curlCA, TokenFile, base, channel.PathArtifact, platform),
		fmt.Sprintf("echo '%s  '\"$tmp\" | sha256sum -c -", digest),
		"install -m 0755 -o root -g root \"$tmp\" " + AgentBinary,
		"rm -f \"$tmp\"",
		"systemctl daemon-reload",
		// The join waits for the plane's decision: an agent started while its join is pending runs
		// recipes only until restarted, so the service starts once the join is approved.
		fmt.Sprintf("%s join --plane '%s'%s --name %s --token-file %s --wait %s", AgentBinary, base, joinCA, nameArg, TokenFile, JoinWait),
		"rm -f " + TokenFile + " " + TokenFile + ".header",
		"systemctl enable --now lexicon-agent",
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return errcode.New(errcode.UsageInvalid, "name %q must be a host name of at most 63 characters", name).With(errcode.DetailField, "name")
	}
	return nil
}
