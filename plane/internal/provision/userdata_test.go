package provision_test

import (
	"os"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/internal/provision"
	"github.com/lexicon-fleet/lexicon/sdk/driver/cloud"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/testkit"
)

const testToken = "lxp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

func userDataParams() provision.UserDataParams {
	return provision.UserDataParams{
		Bootstrap: provision.Bootstrap{PlaneURL: "https://plane.example:8443/", CA: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			Trust: map[string]string{"statement_keys/release.pub": "lexicon-statement-key:abc\n", "log_keys/rekor.pub": "log-key\n"}},
		Name: "web-1", Platform: "linux-arm64", Digest: agentDigest(), Token: testToken,
	}
}

// TestUserDataIsCloudConfig: the user data parses as YAML cloud-config, writes the trust folder,
// policy, CA, unit and token file, fetches the platform's agent with the CA, checks the digest, installs,
// joins with the token file and starts the service; the token appears nowhere but its two files.
func TestUserDataIsCloudConfig(t *testing.T) {
	ud, err := provision.UserData(userDataParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(ud) > cloud.MaxUserDataLen {
		t.Fatalf("user data is %d bytes", len(ud))
	}
	cc := parseUserData(t, ud)
	files := map[string]string{}
	for _, f := range cc.WriteFiles {
		files[f.Path] = f.Permissions
	}
	for path, perm := range map[string]string{
		"/etc/lexicon-agent/policy.json":                      "0644",
		"/etc/lexicon-agent/trust/statement_keys/release.pub": "0644",
		"/etc/lexicon-agent/trust/log_keys/rekor.pub":         "0644",
		provision.CAFile:                "0644",
		provision.UnitFile:              "0644",
		provision.TokenFile:             "0600",
		provision.TokenFile + ".header": "0600",
	} {
		if files[path] != perm {
			t.Errorf("write_files %s: permissions %q, want %q", path, files[path], perm)
		}
	}
	if len(cc.RunCmd) != 1 || len(cc.RunCmd[0]) != 3 {
		t.Fatalf("runcmd: %v", cc.RunCmd)
	}
	script := cc.RunCmd[0][2]
	for _, want := range []string{
		"--cacert " + provision.CAFile,
		"'https://plane.example:8443/api/v1/agent/artifact?agent=linux-arm64'",
		"echo '" + agentDigest() + "  '\"$tmp\" | sha256sum -c -",
		"install -m 0755 -o root -g root \"$tmp\" /usr/local/bin/lexicon-agent",
		"/usr/local/bin/lexicon-agent join --plane 'https://plane.example:8443' --ca " + provision.CAFile + " --name 'web-1' --token-file " + provision.TokenFile + " --wait 1h",
		"systemctl enable --now lexicon-agent",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the script lacks %q:\n%s", want, script)
		}
	}
	if strings.Index(script, "sha256sum") > strings.Index(script, "install -m") {
		t.Error("the agent is installed before its digest is checked")
	}
	if n := strings.Count(ud, testToken); n != 2 {
		t.Errorf("the token appears %d times, want 2 (its file and the header file)", n)
	}
	if strings.Contains(script, testToken) {
		t.Error("the token is on a command line")
	}
}

// TestUserDataRefusesWhatCouldBreakOut: nothing interpolated into the script can leave its quotes.
func TestUserDataRefusesWhatCouldBreakOut(t *testing.T) {
	for name, mut := range map[string]func(*provision.UserDataParams){
		"url quote":  func(p *provision.UserDataParams) { p.PlaneURL = "https://x/'; rm -rf /" },
		"url scheme": func(p *provision.UserDataParams) { p.PlaneURL = "file:///etc" },
		"name":       func(p *provision.UserDataParams) { p.Name = "a'b" },
		"platform":   func(p *provision.UserDataParams) { p.Platform = "linux amd64" },
		"digest":     func(p *provision.UserDataParams) { p.Digest = "abc" },
		"token":      func(p *provision.UserDataParams) { p.Token = "secret" },
		"trust path": func(p *provision.UserDataParams) { p.Trust = map[string]string{"../../etc/passwd": "x"} },
		"too big":    func(p *provision.UserDataParams) { p.Policy = strings.Repeat("x", cloud.MaxUserDataLen) },
	} {
		t.Run(name, func(t *testing.T) {
			p := userDataParams()
			mut(&p)
			_, err := provision.UserData(p)
			testkit.WantCode(t, err, errcode.UsageInvalid)
		})
	}
}

// TestUnitIsTheAgents keeps the embedded unit the agent's own.
func TestUnitIsTheAgents(t *testing.T) {
	want, err := os.ReadFile("../../../agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("plane/internal/provision/lexicon-agent.service differs from agent/cmd/lexicon-agent/lexicon-agent.service: copy it")
	}
}

func FuzzUserData(f *testing.F) {
	f.Add("web-1", "https://plane.example", "linux-amd64")
	f.Fuzz(func(t *testing.T, name, url, platform string) {
		p := userDataParams()
		p.Name, p.PlaneURL, p.Platform = name, url, platform
		ud, err := provision.UserData(p)
		if err != nil {
			return
		}
		parseUserData(t, ud)
	})
}
