package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseUserData(t *testing.T) {
	ud, err := parseUserData(`#cloud-config
hostname: ignored
write_files:
  - path: /etc/lexicon-agent/a
    content: aGVsbG8=
    encoding: b64
    permissions: '0600'
    owner: nobody:nogroup
  - path: /usr/local/bin/b
    content: plain
runcmd:
  - echo one
  - [ls, -l, /]
`, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ud.WriteFiles) != 2 || string(ud.WriteFiles[0].Content) != "hello" || ud.WriteFiles[0].Mode != 0o600 ||
		ud.WriteFiles[0].User != "nobody" || ud.WriteFiles[0].Group != "nogroup" || ud.WriteFiles[1].Mode != 0o644 || ud.WriteFiles[1].User != "root" {
		t.Errorf("write_files = %+v", ud.WriteFiles)
	}
	if len(ud.RunCmd) != 2 || ud.RunCmd[0].Shell != "echo one" || !slices.Equal(ud.RunCmd[1].Argv, []string{"ls", "-l", "/"}) {
		t.Errorf("runcmd = %+v", ud.RunCmd)
	}
	if !slices.Equal(ud.Skipped, []string{"hostname"}) {
		t.Errorf("skipped = %v", ud.Skipped)
	}
	for name, bad := range map[string]string{
		"outside":        "#cloud-config\nwrite_files:\n  - path: /etc/shadow\n    content: x\n",
		"climbs out":     "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/../shadow\n    content: x\n",
		"bare folder":    "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent\n    content: x\n",
		"bad base64":     "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/a\n    encoding: b64\n    content: '!!'\n",
		"bad encoding":   "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/a\n    encoding: rot13\n    content: x\n",
		"bad mode":       "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/a\n    permissions: '0999'\n    content: x\n",
		"bad owner":      "#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/a\n    owner: 'a b'\n    content: x\n",
		"runcmd map":     "#cloud-config\nruncmd:\n  - {a: b}\n",
		"runcmd scalar":  "#cloud-config\nruncmd: ls\n",
		"not yaml":       "#cloud-config\n: : :\n  - [\n",
		"not cloud-init": "write_files: []\n",
	} {
		if _, err := parseUserData(bad, false); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if ud, err := parseUserData("#!/bin/sh\necho hi\n", false); err != nil || ud.Script == nil {
		t.Errorf("a script: %+v, %v", ud, err)
	}
}

// The agent's own unit file, as the shim reads it.
func TestParseAgentUnit(t *testing.T) {
	raw, err := os.ReadFile("../../../agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Pre) != 1 || u.Pre[0].Argv[0] != "/var/lib/lexicon-agent/update/known-good" || u.Pre[0].Argv[1] != "guard" || !u.Pre[0].IgnoreFail {
		t.Errorf("ExecStartPre = %+v", u.Pre)
	}
	if strings.Join(u.Start.Argv, " ") != "/usr/local/bin/lexicon-agent run --state-dir /var/lib/lexicon-agent --config-dir /etc/lexicon-agent" {
		t.Errorf("ExecStart = %+v", u.Start)
	}
	if u.Restart != "always" || u.RestartSec != 5*time.Second {
		t.Errorf("Restart=%s RestartSec=%s", u.Restart, u.RestartSec)
	}
	u, err = parseUnit("[Service]\nEnvironment=\"A=b c\" D=e\nExecStart=-/bin/sh -c 'echo \"hi there\"'\nRestartSec=250ms\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.Env, []string{"A=b c", "D=e"}) || !slices.Equal(u.Start.Argv, []string{"/bin/sh", "-c", `echo "hi there"`}) || !u.Start.IgnoreFail || u.RestartSec != 250*time.Millisecond {
		t.Errorf("unit = %+v", u)
	}
	for _, bad := range []string{"[Service]\nType=simple\n", "[Service]\nExecStart=relative\n", "[Service]\nExecStart=/bin/x 'open\n", "[Service]\nnot a line\n"} {
		if _, err := parseUnit(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	for _, bad := range []string{"../x", "a/b.service", "x.socket", ""} {
		if _, err := unitName(bad); err == nil {
			t.Errorf("unit name %q accepted", bad)
		}
	}
}

func FuzzParseUserData(f *testing.F) {
	f.Add("#cloud-config\nwrite_files:\n  - path: /etc/lexicon-agent/a\n    content: aGk=\n    encoding: b64\nruncmd:\n  - [a, b]\n  - c\n")
	f.Add("#!/bin/sh\n")
	f.Add("#cloud-config\n{}\n")
	f.Fuzz(func(t *testing.T, s string) {
		ud, err := parseUserData(s, false)
		if err != nil {
			return
		}
		for _, w := range ud.WriteFiles {
			ok := false
			for _, p := range writablePrefixes {
				ok = ok || strings.HasPrefix(w.Path, p+"/")
			}
			if !ok || strings.Contains(w.Path, "/../") || strings.HasSuffix(w.Path, "/..") {
				t.Fatalf("accepted a path outside the instance: %q", w.Path)
			}
		}
		for _, c := range ud.RunCmd {
			if c.Argv == nil && c.Shell == "" || c.Argv != nil && c.Argv[0] == "" {
				t.Fatalf("accepted an empty command: %+v", c)
			}
		}
	})
}

func FuzzParseUnit(f *testing.F) {
	f.Add("[Service]\nExecStartPre=-/bin/true\nExecStart=/bin/sh -c 'x \"y\"' \\\n  z\nRestart=always\nRestartSec=5s\nEnvironment=A=b\n")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := parseUnit(s)
		if err != nil {
			return
		}
		if len(u.Start.Argv) == 0 || !strings.HasPrefix(u.Start.Argv[0], "/") || u.RestartSec < 0 || u.RestartSec > time.Hour {
			t.Fatalf("accepted %+v", u)
		}
	})
}
