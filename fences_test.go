package lexicon_test

// The dependency fences of ARCHITECTURE.md, enforced the way tailscale's deptest does: list what each
// package really links and refuse what its fence forbids. A fence that only lives in a document erodes
// with the first convenient import.

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/lexicon-fleet/lexicon"

type fence struct {
	pattern string   // packages fenced, relative to the module root
	env     []string // extra environment for go list (GOOS for wasip1 code)
	// forbidden reports why dep may not be imported, or "" if it may.
	forbidden func(dep string) string
	// except, when set, lets pkg import dep whatever forbidden says.
	except func(pkg, dep string) bool
}

func stdlib(dep string) bool { return !strings.Contains(strings.Split(dep, "/")[0], ".") }

func inModule(dep, dir string) bool {
	p := module + "/" + dir
	return dep == p || strings.HasPrefix(dep, p+"/")
}

var fences = []fence{
	{pattern: "agent", forbidden: func(dep string) string {
		switch {
		case inModule(dep, "plane"):
			return "the agent never imports the plane"
		case strings.HasPrefix(dep, "github.com/jackc/pgx"):
			return "the agent never links pgx"
		case strings.HasPrefix(dep, "github.com/go-chi/chi"):
			return "the agent never links chi"
		case strings.HasPrefix(dep, "github.com/hashicorp/go-plugin"), inModule(dep, "host/goplugin"):
			return "the agent never links go-plugin"
		}
		return ""
	}},
	{pattern: "registry", forbidden: func(dep string) string {
		if inModule(dep, "agent") || inModule(dep, "plane") {
			return "registry imports neither agent nor plane; both import it"
		}
		return ""
	}},
	{pattern: "host", forbidden: func(dep string) string {
		if inModule(dep, "agent") || inModule(dep, "plane") {
			return "host runs modules for agent and plane and imports neither"
		}
		return ""
	}},
	{pattern: "sdk", forbidden: func(dep string) string {
		if strings.HasPrefix(dep, module+"/") && !inModule(dep, "sdk") {
			return "sdk is what outside authors import; it imports nothing else of Lexicon"
		}
		return ""
	}, except: func(pkg, dep string) bool {
		// wordtest runs an author's built word through the real host in `go test`; it is never built
		// into a word (it does not build for wasip1, which the sdk/word fence checks), and it still may
		// not reach the agent or the plane.
		return inModule(pkg, "sdk/word/wordtest") && (inModule(dep, "host") || inModule(dep, "registry"))
	}},
	{pattern: "sdk/word", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, forbidden: func(dep string) string {
		if !stdlib(dep) && !inModule(dep, "sdk") {
			return "sdk/word builds for wasip1 on the standard library and sdk alone"
		}
		return ""
	}},
	{pattern: "primitives", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, forbidden: outsideAuthor},
	{pattern: "plugins", forbidden: outsideAuthor},
	{pattern: "examples", forbidden: outsideAuthor},
}

// outsideAuthor is the fence of built-in modules: they import sdk/ and their provider's SDK, exactly as
// an outside author would, and nothing else of Lexicon.
func outsideAuthor(dep string) string {
	if strings.HasPrefix(dep, module+"/") && !inModule(dep, "sdk") {
		return "built-in modules import only sdk/, as an outside author would"
	}
	return ""
}

func TestDependencyFences(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the whole module is slow")
	}
	for _, f := range fences {
		t.Run(f.pattern, func(t *testing.T) {
			if _, err := os.Stat(filepath.FromSlash(f.pattern)); err != nil {
				t.Skipf("%s does not exist yet", f.pattern)
			}
			deps := goListDeps(t, f.env, "./"+f.pattern+"/...")
			if len(deps) == 0 {
				t.Fatalf("go list found no packages under %s", f.pattern)
			}
			for pkg, list := range deps {
				for _, dep := range list {
					if f.except != nil && f.except(pkg, dep) {
						continue
					}
					if why := f.forbidden(dep); why != "" {
						t.Errorf("%s imports %s: %s", pkg, dep, why)
					}
				}
			}
		})
	}
}

// goListDeps maps each package matching pattern to its transitive, non-test imports.
func goListDeps(t *testing.T, env []string, pattern string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", pattern)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, stderr.String())
	}
	deps := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 {
			deps[fields[0]] = fields[1:]
		}
	}
	return deps
}

// TestFenceCatchesViolation proves the fence test can fail: a forbidden import is reported.
func TestFenceCatchesViolation(t *testing.T) {
	for _, f := range fences {
		if f.pattern == "agent" {
			if f.forbidden("github.com/jackc/pgx/v5") == "" || f.forbidden(module+"/plane/store") == "" {
				t.Fatal("agent fence lets pgx or plane through")
			}
			if f.forbidden(module+"/registry") != "" {
				t.Fatal("agent fence refuses registry")
			}
		}
	}
}
