package authors_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

const lexiconModule = "github.com/lexicon-fleet/lexicon"

// repoRoot is the checkout the fresh module replaces Lexicon with, as an author would pin a version.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// binaries are the released commands, built once per test binary from this checkout.
var binaries struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// bin returns the folder holding lexicon-release and lexicon-agent.
func bin(t *testing.T) string {
	t.Helper()
	binaries.once.Do(func() {
		if binaries.dir, binaries.err = os.MkdirTemp("", "lexicon-authors-bin-"); binaries.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binaries.dir+string(filepath.Separator),
			"./registry/cmd/lexicon-release", "./agent/cmd/lexicon-agent")
		cmd.Dir = repoRoot(t)
		binaries.out, binaries.err = cmd.CombinedOutput()
	})
	if binaries.err != nil {
		t.Fatalf("building the released binaries: %v\n%s", binaries.err, binaries.out)
	}
	return binaries.dir
}

// fresh is an author's module outside the repository.
type fresh struct {
	t   *testing.T
	dir string
	env []string
}

// newFresh makes an empty module in a temporary folder that requires Lexicon through a replace to this
// checkout. It works offline: the proxy is off and go.sum starts as the checkout's, so every
// dependency comes from the module cache the checkout's own build filled, and -mod=mod lets go add the
// requirements an author's `go get` would.
func newFresh(t *testing.T) *fresh {
	t.Helper()
	root := repoRoot(t)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(gomod)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fresh{t: t, dir: t.TempDir()}
	f.write("go.mod", "module example.com/author\n\n"+string(goLine)+"\n\nrequire "+lexiconModule+" v0.0.0\n\nreplace "+
		lexiconModule+" => "+root+"\n")
	f.write("go.sum", string(sum))
	flags := "-mod=mod"
	if v := os.Getenv("GOFLAGS"); v != "" {
		flags = v + " " + flags
	}
	f.env = append(os.Environ(), "GOFLAGS="+flags, "GOPROXY=off", "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return f
}

// write writes a file of the fresh module; this and copyExample are the only ways files get there.
func (f *fresh) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// copyExample writes an example's source files into the fresh module, as an author copies them.
func (f *fresh) copyExample(example, to string, files ...string) {
	f.t.Helper()
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot(f.t), "examples", example, name))
		if err != nil {
			f.t.Fatal(err)
		}
		f.write(filepath.Join(to, name), string(b))
	}
}

func (f *fresh) path(rel string) string { return filepath.Join(f.dir, rel) }

// run runs a command in the fresh module and fails the test unless it succeeds; it returns stdout.
func (f *fresh) run(env []string, name string, args ...string) string {
	f.t.Helper()
	out, errOut, err := f.try(env, name, args...)
	if err != nil {
		f.t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func (f *fresh) try(env []string, name string, args ...string) (string, string, error) {
	f.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = f.dir
	cmd.Env = append(append([]string{}, f.env...), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// assertNoInternal fails the test if a package of the fresh module, or its tests, imports a package
// under internal/ of Lexicon. The go command refuses such an import anyway; this names the culprit.
// Packages the public ones use transitively may be internal: they are the SDK's own implementation.
func (f *fresh) assertNoInternal() {
	f.t.Helper()
	out := f.run(nil, "go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, lexiconModule+"/") && (strings.Contains(imp, "/internal/") || strings.HasSuffix(imp, "/internal")) {
				f.t.Errorf("%s imports %s, which an author cannot", pkg, imp)
			}
		}
	}
	// And the module must really be outside: no package of it may live in the checkout.
	deps := f.run(nil, "go", "list", "-deps", "-test", "-f", "{{.ImportPath}}\t{{.Dir}}", "./...")
	for line := range strings.SplitSeq(strings.TrimSpace(deps), "\n") {
		path, dir, _ := strings.Cut(line, "\t")
		if strings.HasPrefix(path, "example.com/author") && !strings.HasPrefix(dir, f.dir) {
			f.t.Errorf("%s is built from %s, not from the fresh module", path, dir)
		}
	}
}
