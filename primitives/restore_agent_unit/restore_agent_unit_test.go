package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/wordtest"
)

const wasmFile = "../../build/wasm/restore_agent_unit.wasm"

// The copy the word carries is the agent's own unit file, byte for byte.
func TestCarriesTheAgentsUnit(t *testing.T) {
	mine, err := os.ReadFile("lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile("../../agent/cmd/lexicon-agent/lexicon-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mine, theirs) {
		t.Fatal("primitives/restore_agent_unit/lexicon-agent.service differs from agent/cmd/lexicon-agent/lexicon-agent.service: copy it again")
	}
}

type restored struct {
	Restored      string `json:"restored"`
	SHA256        string `json:"sha256"`
	UnitFileState string `json:"unit_file_state"`
	Restart       string `json:"restart"`
}

// unitNode is a temporary etc/systemd/system the word's fs roots point at, and a service manager whose
// daemon-reload reads it.
func unitNode(t *testing.T, units map[string]string) (dir string, fake *wordtest.FakeSystemd, w *wordtest.Word) {
	dir = filepath.Join(wordtest.WritableDir(t), "etc", "systemd", "system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fake = wordtest.NewFakeSystemd(units)
	fake.UnitDir = dir
	w = wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithSystemd(fake),
		wordtest.Paths("fs.read", dir), wordtest.Paths("fs.write", dir))
	return dir, fake, w
}

func TestRestores(t *testing.T) {
	want, _ := os.ReadFile("lexicon-agent.service")
	for _, tc := range []struct {
		name, before, restored, actions string
	}{
		{"missing", "", "missing", "daemon-reload;enable lexicon-agent.service"},
		{"edited", "[Service]\nExecStart=/usr/local/bin/lexicon-agent run\nRestart=no\n", "edited", "daemon-reload;enable lexicon-agent.service"},
		{"unchanged", string(want), "unchanged", "daemon-reload;enable lexicon-agent.service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, fake, w := unitNode(t, nil)
			path := filepath.Join(dir, "lexicon-agent.service")
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out restored
			res := w.Must(map[string]any{"unit_dir": dir}, &out)
			if out.Restored != tc.restored || out.UnitFileState != "enabled" || out.Restart != "always" {
				t.Fatalf("%+v", out)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, want) {
				t.Fatalf("unit file now:\n%s", got)
			}
			if a := strings.Join(fake.Actions(), ";"); a != tc.actions {
				t.Fatalf("actions %q", a)
			}
			wrote := false
			for _, c := range res.Capabilities {
				wrote = wrote || c.Cap == "fs.write"
			}
			if wrote != (tc.restored != "unchanged") {
				t.Fatalf("wrote %v for a %s unit", wrote, tc.restored)
			}
		})
	}
}

// TestDropInStillOverrides: the file is put back but systemd still does not restart the agent (a
// drop-in turns it off): the word says so rather than claim a repair.
func TestDropInStillOverrides(t *testing.T) {
	dir, fake, w := unitNode(t, map[string]string{"lexicon-agent.service": "LoadState=loaded\nUnitFileState=disabled\nRestart=no\n"})
	fake.UnitDir = "" // systemd keeps what it had: the drop-in's Restart=no wins over the file
	res := w.Run(map[string]any{"unit_dir": dir})
	if res.Code != "restore_agent_unit.still_unsupervised" || res.Details["restart"] != "no" {
		t.Fatalf("%s %s %v", res.Code, res.Message, res.Details)
	}
}

// TestContainment: the word writes nowhere but the declared unit folder: a unit_dir elsewhere, or a
// link in the unit folder leading out, is refused and nothing is written or enabled.
func TestContainment(t *testing.T) {
	dir, fake, w := unitNode(t, nil)
	outside := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(dir))), "home", "alice")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "alice")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{outside, filepath.Join(dir, "alice"), "/etc/systemd/system", dir + "/../../../home/alice"} {
		res := w.Run(map[string]any{"unit_dir": d})
		if res.Code != errcode.CapabilityDenied {
			t.Fatalf("unit_dir %s: %s %s", d, res.Code, res.Message)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("written outside: %v", entries)
	}
	if _, err := os.Lstat(filepath.Join(dir, "lexicon-agent.service")); !os.IsNotExist(err) {
		t.Fatalf("written in the unit folder: %v", err)
	}
	if len(fake.Actions()) != 0 {
		t.Fatalf("actions %v", fake.Actions())
	}
	nosd := wordtest.Load(t, wasmFile, "manifest.json", wordtest.WithoutSystemd(),
		wordtest.Paths("fs.read", dir), wordtest.Paths("fs.write", dir))
	if res := nosd.Run(map[string]any{"unit_dir": dir}); res.Code != errcode.CapabilityUnknown {
		t.Fatalf("without systemd: %s", res.Code)
	}
}
