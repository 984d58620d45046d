package authors_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestAuthorPath is the whole author's path, from a fresh folder with only the public packages and the
// released binaries: a word, a recipe and a DNS driver are written, built, tested, signed into one
// release, verified, and run by the agent.
func TestAuthorPath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and three modules from a fresh folder")
	}
	bins := bin(t)
	release, agent := filepath.Join(bins, "lexicon-release"), filepath.Join(bins, "lexicon-agent")
	f := newFresh(t)
	wasip1 := []string{"GOOS=wasip1", "GOARCH=wasm"}
	buildWasm := func(out, pkg string) {
		t.Helper()
		raw := f.path(filepath.Join("build", out+".raw"))
		f.run(wasip1, "go", "build", "-trimpath", "-buildvcs=false", "-o", raw, pkg)
		f.run(nil, release, "wasmpost", "--out", f.path(filepath.Join("build", out)), raw)
		os.Remove(raw)
	}

	// 1. The word: word-hello's source, built for wasip1, merged by wasmpost, and tested with wordtest
	// against the merged module, the one that gets signed.
	f.copyExample("word-hello", "word", "main.go", "manifest.json", "hello_test.go")
	// 2. The recipe: recipe-motd's check and repair word, tested with recipetest (the two-tick rule, an
	// unknown that does not count, and a refused repair that spends the budget and escalates).
	f.copyExample("recipe-motd", "recipe", "main.go", "manifest.json", "motd_test.go", "repair/main.go", "repair/manifest.json")
	// 3. The driver: driver-memory, which runs the DNS conformance kit.
	f.copyExample("driver-memory", "driver", "main.go", "main_test.go", "manifest.json")
	f.assertNoInternal()

	buildWasm("hello.wasm", "./word")
	f.run([]string{"LEXICON_HELLO_WASM=" + f.path("build/hello.wasm")}, "go", "test", "-count=1", "./word")
	out := f.run(nil, "go", "test", "-count=1", "-v", "-run", "TestRepairsAfterTwoTicks|TestFailingRepairEscalates|TestUnknownNeverCounts", "./recipe")
	for _, name := range []string{"TestRepairsAfterTwoTicks", "TestFailingRepairEscalates", "TestUnknownNeverCounts"} {
		if !strings.Contains(out, "--- PASS: "+name) {
			t.Errorf("the recipe's %s did not pass:\n%s", name, out)
		}
	}
	buildWasm("motd.wasm", "./recipe")
	buildWasm("motd_write.wasm", "./recipe/repair")
	out = f.run(nil, "go", "test", "-count=1", "-v", "-run", "TestConformance", "./driver")
	if !strings.Contains(out, "--- PASS: TestConformance") {
		t.Errorf("the driver did not pass the conformance kit:\n%s", out)
	}
	f.run([]string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", f.path("build/lexicon-driver-dns-memory"), "./driver")

	// 4. Sign all three into one release, verify it as a node would, and run them with the agent.
	stage := func(dir, manifest, file string) {
		t.Helper()
		for _, src := range []string{manifest, file} {
			b, err := os.ReadFile(f.path(src))
			if err != nil {
				t.Fatal(err)
			}
			f.write(filepath.Join("modules", dir, filepath.Base(src)), string(b))
		}
	}
	stage("hello", "word/manifest.json", "build/hello.wasm")
	stage("motd", "recipe/manifest.json", "build/motd.wasm")
	stage("motd_write", "recipe/repair/manifest.json", "build/motd_write.wasm")
	if runtime.GOOS+"/"+runtime.GOARCH == "linux/amd64" { // the platform driver-memory's manifest names
		stage("memory", "driver/manifest.json", "build/lexicon-driver-dns-memory")
	}
	f.run(nil, release, "keygen", "--out", f.path("keys"))
	f.run(nil, release, "build", "--key", f.path("keys/publisher.key"), "--modules", f.path("modules"),
		"--release", "1.0.0", "--sequence", "1", "--out", f.path("release"))
	f.run(nil, release, "trust", "init", "--out", f.path("trust"), "--key", f.path("keys/publisher.pub"))
	var verified map[string]any
	decode(t, f.run(nil, release, "verify", f.path("release"), "--trust", f.path("trust"), "-o", "json"), &verified)

	state, config := f.path("node/state"), f.path("node/config")
	f.run(nil, release, "trust", "init", "--out", filepath.Join(config, "trust"), "--key", f.path("keys/publisher.pub"))
	var installed struct {
		Recipes []string `json:"recipes"`
	}
	decode(t, f.run(nil, agent, "release", "install", f.path("release"), "--state-dir", state, "--config-dir", config, "-o", "json"), &installed)
	if len(installed.Recipes) != 1 || installed.Recipes[0] != "motd" {
		t.Fatalf("the node's vocabulary holds the recipes %v, want [motd]", installed.Recipes)
	}

	var ran struct {
		OK      bool   `json:"ok"`
		Outcome string `json:"outcome"`
		Output  struct {
			Greeting string `json:"greeting"`
		} `json:"output"`
	}
	decode(t, f.run(nil, agent, "word", "run", "--release", f.path("release"), "--trust", f.path("trust"), "--word", "hello",
		"--params", `{"name": "author"}`, "--cache-dir", f.path("cache"), "--state-dir", state, "-o", "json"), &ran)
	if !ran.OK || ran.Output.Greeting != "hello, author" {
		t.Fatalf("lexicon-agent word run: %+v", ran)
	}

	// The recipe runs in the agent's own loop: run the agent until it logs the recipe's first check,
	// then read what it saw with lexicon-agent recipes.
	verdict := runAgentUntilChecked(t, f, agent, state, config, "motd")
	var history struct {
		Events []struct {
			Event, Verdict, Detail string
		} `json:"events"`
	}
	decode(t, f.run(nil, agent, "recipes", "motd", "--state-dir", state, "--config-dir", config, "-o", "json"), &history)
	var last string
	for _, ev := range history.Events {
		if ev.Event == "check" {
			last = ev.Verdict
		}
	}
	if last == "" || last != verdict {
		t.Fatalf("lexicon-agent recipes motd shows the last check %q, the agent logged %q: %+v", last, verdict, history)
	}
	var list struct {
		Recipes []struct {
			Name        string `json:"name"`
			LastVerdict string `json:"last_verdict"`
		} `json:"recipes"`
	}
	decode(t, f.run(nil, agent, "recipes", "--state-dir", state, "--config-dir", config, "-o", "json"), &list)
	if len(list.Recipes) != 1 || list.Recipes[0].Name != "motd" || list.Recipes[0].LastVerdict != verdict {
		t.Fatalf("lexicon-agent recipes: %+v", list)
	}
}

// runAgentUntilChecked runs `lexicon-agent run --debug` and waits for its log line saying the recipe
// was checked, then stops the agent and returns the verdict it logged.
func runAgentUntilChecked(t *testing.T, f *fresh, agent, state, config, recipe string) string {
	t.Helper()
	cmd := exec.Command(agent, "run", "--state-dir", state, "--config-dir", config, "--debug")
	cmd.Dir, cmd.Env = f.dir, f.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var seen []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen = append(seen, sc.Text())
		var line struct {
			Msg, Recipe, Verdict string
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "recipe checked" && line.Recipe == recipe {
			go io.Copy(io.Discard, stderr) // let the agent log on until it is stopped
			return line.Verdict
		}
	}
	t.Fatalf("the agent ended without checking %s:\n%s", recipe, strings.Join(seen, "\n"))
	return ""
}

func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}
