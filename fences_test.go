package lexicon_test

// The dependency fences of ARCHITECTURE.md, "What each part may import", enforced the way tailscale's
// deptest does: list what each package really links and refuse what its fence forbids. A fence that
// only lives in a document erodes with the first convenient import, and a document that drifts from
// the fences misleads; TestFencesDocumented holds the two to the same lines.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lexicon-fleet/lexicon"

type fence struct {
	pattern string   // packages fenced, relative to the module root
	rule    string   // the fence as ARCHITECTURE.md states it, one bullet, word for word
	env     []string // extra environment for go list (GOOS for wasip1 code)
	// direct fences what the packages import themselves, not what they link: a package may reach a
	// forbidden one only through another it is allowed to import.
	direct bool
	// forbidden reports why dep may not be imported, or "" if it may.
	forbidden func(dep string) string
	// except, when set, lets pkg import dep whatever forbidden says.
	except func(pkg, dep string) bool
	// breaks are imports this fence must refuse, and keeps imports it must let through: the self-test
	// shows the fence failing on a package that breaks it, so that a fence cannot silently hold nothing.
	breaks, keeps []string
	// exceptBreaks and exceptKeeps are {package, import} pairs that show an exception is as narrow as
	// its rule says: the excepted package's own import goes through, a neighbour's does not.
	exceptBreaks, exceptKeeps [][2]string
}

func stdlib(dep string) bool { return !strings.Contains(strings.Split(dep, "/")[0], ".") }

func inModule(dep, dir string) bool {
	p := module + "/" + dir
	return dep == p || strings.HasPrefix(dep, p+"/")
}

var fences = []fence{
	{pattern: "agent", rule: "`agent` never imports `plane`, and never links pgx, chi, go-plugin (nor `host/goplugin`), gRPC, OpenTelemetry or go-openapi (the Sigstore clients' stacks), or an S3 client (nor `backup/presign` or `backup/backuptest`): the agent binary stays small, and sends the requests the plane presigned with net/http.", forbidden: func(dep string) string {
		switch {
		case inModule(dep, "plane"):
			return "the agent never imports the plane"
		case strings.HasPrefix(dep, "github.com/jackc/pgx"):
			return "the agent never links pgx"
		case strings.HasPrefix(dep, "github.com/go-chi/chi"):
			return "the agent never links chi"
		case strings.HasPrefix(dep, "github.com/hashicorp/go-plugin"), inModule(dep, "host/goplugin"):
			return "the agent never links go-plugin"
		case strings.HasPrefix(dep, "github.com/aws/"), inModule(dep, "backup/presign"), inModule(dep, "backup/backuptest"):
			return "the agent never links an S3 client: it sends the requests the plane presigned, with net/http"
		case dep == "google.golang.org/grpc" || strings.HasPrefix(dep, "google.golang.org/grpc/"),
			strings.HasPrefix(dep, "go.opentelemetry.io/"), strings.HasPrefix(dep, "github.com/go-openapi/"):
			return "the agent verifies statements offline and links no gRPC, OpenTelemetry or go-openapi client stack (registry/RATIONALE.md, \"What the agent links of Sigstore\")"
		}
		return ""
	}, breaks: []string{module + "/plane/store", "github.com/jackc/pgx/v5", "github.com/go-chi/chi/v5", "github.com/hashicorp/go-plugin", module + "/host/goplugin",
		"github.com/aws/aws-sdk-go-v2/service/s3", module + "/backup/presign",
		"google.golang.org/grpc", "google.golang.org/grpc/codes", "go.opentelemetry.io/otel", "github.com/go-openapi/runtime"},
		keeps: []string{module + "/registry", module + "/host/wasm", "net/http", module + "/backup/archive", "filippo.io/age",
			"google.golang.org/protobuf/proto", "github.com/sigstore/rekor-tiles/v2/pkg/verify", "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"}},
	// The node's side of backups (the format, the archive) is linked into the agent and the word host: it
	// imports neither of them, nor the plane, nor an S3 client; the presigner and the test server are the
	// plane's and the tests'.
	{pattern: "backup", rule: "`backup` imports `registry` and `sdk`, never `host`, `agent` or `plane`, which import it; of it only `backup/presign` (the plane's) and `backup/backuptest` (the tests') link an S3 client.", forbidden: func(dep string) string {
		switch {
		case inModule(dep, "agent"), inModule(dep, "plane"), inModule(dep, "host"):
			return "backup is imported by the agent, the word host and the plane, and imports none of them"
		case strings.HasPrefix(dep, "github.com/aws/"):
			return "only backup/presign and backup/backuptest link the S3 client"
		}
		return ""
	}, except: func(pkg, dep string) bool {
		return (inModule(pkg, "backup/presign") || inModule(pkg, "backup/backuptest")) && strings.HasPrefix(dep, "github.com/aws/")
	}, breaks: []string{module + "/agent/policy", module + "/host/wasm", module + "/plane/store", "github.com/aws/aws-sdk-go-v2/service/s3"},
		keeps:        []string{module + "/registry/channel", "filippo.io/age", "golang.org/x/sys/unix"},
		exceptKeeps:  [][2]string{{module + "/backup/presign", "github.com/aws/aws-sdk-go-v2/service/s3"}, {module + "/backup/backuptest", "github.com/aws/aws-sdk-go-v2/service/s3"}},
		exceptBreaks: [][2]string{{module + "/backup/archive", "github.com/aws/aws-sdk-go-v2/service/s3"}, {module + "/backup/presign", module + "/plane/store"}}},
	{pattern: "registry", rule: "`registry` imports only `sdk` of Lexicon: never `host`, `agent` or `plane`, which all import it.", forbidden: func(dep string) string {
		switch {
		case inModule(dep, "agent") || inModule(dep, "plane"):
			return "registry imports neither agent nor plane; both import it"
		case inModule(dep, "host"):
			return "registry imports no host: the host imports the registry's manifests, CAS and keys, and build-time tools live with lexicon-release"
		case inModule(dep, "backup"):
			return "registry imports no backup: backup builds on the registry's wire format"
		}
		return ""
	}, breaks: []string{module + "/agent/policy", module + "/plane/store", module + "/host/wasm", module + "/backup"}, keeps: []string{module + "/sdk/errcode", "github.com/sigstore/sigstore-go/pkg/verify"}},
	// The packaging library (and the git, OpenPGP and templating code it brings) stays in the one tool
	// that makes packages: the publisher's tool holds the signing key and links only what signing needs.
	{pattern: "registry", rule: "Only `registry/cmd/lexicon-package` links the packaging library (goreleaser's nfpm).", forbidden: func(dep string) string {
		if strings.HasPrefix(dep, "github.com/goreleaser/") {
			return "only registry/cmd/lexicon-package links the packaging library"
		}
		return ""
	}, except: func(pkg, dep string) bool { return inModule(pkg, "registry/cmd/lexicon-package") },
		breaks: []string{"github.com/goreleaser/nfpm/v2", "github.com/goreleaser/nfpm/v2/deb"}, keeps: []string{module + "/sdk/cli", module + "/registry/statement"},
		exceptKeeps:  [][2]string{{module + "/registry/cmd/lexicon-package", "github.com/goreleaser/nfpm/v2/deb"}},
		exceptBreaks: [][2]string{{module + "/registry/cmd/lexicon-release", "github.com/goreleaser/nfpm/v2"}}},
	{pattern: "host", rule: "`host` imports `registry`, `backup` and `sdk`, never `agent` or `plane`: it runs modules for both; it links no S3 client (nor `backup/presign`), and sends the requests the plane presigned with net/http.", forbidden: func(dep string) string {
		switch {
		case inModule(dep, "agent") || inModule(dep, "plane"):
			return "host runs modules for agent and plane and imports neither"
		case strings.HasPrefix(dep, "github.com/aws/") || inModule(dep, "backup/presign") || inModule(dep, "backup/backuptest"):
			return "the word host sends presigned requests with net/http; it links no S3 client"
		}
		return ""
	}, breaks: []string{module + "/agent", module + "/plane/internal/drivers", "github.com/aws/aws-sdk-go-v2/service/s3", module + "/backup/presign"},
		keeps: []string{module + "/registry/manifest", "github.com/tetratelabs/wazero", module + "/backup/archive", "net/http"}},
	{pattern: "sdk", rule: "`sdk` imports nothing of Lexicon outside `sdk`, with one exception: the test kits `sdk/word/wordtest` and `sdk/word/recipetest`, which never build for wasip1, may import `host` and `registry` (and `backup`, which `host` links), never `agent` or `plane`.", forbidden: func(dep string) string {
		if strings.HasPrefix(dep, module+"/") && !inModule(dep, "sdk") {
			return "sdk is what outside authors import; it imports nothing else of Lexicon"
		}
		return ""
	}, except: func(pkg, dep string) bool {
		// wordtest and recipetest run an author's built word or recipe through the real host in `go
		// test`; they are never built into a word (they do not build for wasip1, which the sdk/word
		// fence checks), and they still may not reach the agent or the plane (sdk/RATIONALE.md, "What
		// sdk may import"). The host brings the node's side of backups with it.
		return (inModule(pkg, "sdk/word/wordtest") || inModule(pkg, "sdk/word/recipetest")) &&
			(inModule(dep, "host") || inModule(dep, "registry") || inModule(dep, "backup"))
	}, breaks: []string{module + "/host/wasm", module + "/registry", module + "/plane/api"}, keeps: []string{module + "/sdk/errcode", "github.com/hashicorp/go-plugin"},
		exceptKeeps: [][2]string{{module + "/sdk/word/wordtest", module + "/host/wasm"}, {module + "/sdk/word/recipetest", module + "/registry/manifest"},
			{module + "/sdk/word/wordtest", module + "/backup/archive"}},
		exceptBreaks: [][2]string{{module + "/sdk/word/wordtest", module + "/agent/policy"}, {module + "/sdk/word/recipetest", module + "/plane/api"},
			{module + "/sdk/word", module + "/host/wasm"}, {module + "/sdk/driver/drivertest", module + "/host/goplugin"}, {module + "/sdk/word", module + "/backup"}}},
	{pattern: "sdk/word", rule: "`sdk/word` builds for wasip1 on the standard library and `sdk` alone.", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, forbidden: func(dep string) string {
		if !stdlib(dep) && !inModule(dep, "sdk") {
			return "sdk/word builds for wasip1 on the standard library and sdk alone"
		}
		return ""
	}, breaks: []string{"github.com/tetratelabs/wazero", module + "/registry/manifest"}, keeps: []string{module + "/sdk/errcode", "encoding/json"}},
	{pattern: "primitives", rule: "`primitives` (built for wasip1) import only `sdk` of Lexicon, as an outside author's words would.", env: []string{"GOOS=wasip1", "GOARCH=wasm"}, forbidden: outsideAuthor,
		breaks: outsideAuthorBreaks, keeps: outsideAuthorKeeps},
	{pattern: "plugins", rule: "`plugins` import only `sdk` of Lexicon (and their provider's SDK), as an outside author's drivers would.", forbidden: outsideAuthor, breaks: outsideAuthorBreaks, keeps: outsideAuthorKeeps},
	{pattern: "examples", rule: "`examples` import only `sdk` of Lexicon, as an outside author would.", forbidden: outsideAuthor, breaks: outsideAuthorBreaks, keeps: outsideAuthorKeeps},
	{pattern: "plane", rule: "`plane` never imports `agent`: the two meet only on the wire, whose format is `registry/channel`.", forbidden: func(dep string) string {
		if inModule(dep, "agent") {
			return "the plane and the agent meet only on the wire (registry/channel)"
		}
		return ""
	}, breaks: []string{module + "/agent", module + "/agent/policy"}, keeps: []string{module + "/registry/channel", module + "/host/goplugin", "github.com/jackc/pgx/v5"}},
	{pattern: "plane/cmd/lexicon", rule: "`plane/cmd/lexicon`, the admin CLI, speaks `plane/api`: it never links pgx, SQLite, chi, go-plugin, `plane/store` or `plane/internal`.", forbidden: adminClient,
		breaks: adminClientBreaks, keeps: []string{module + "/plane/api", module + "/registry/cas", module + "/sdk/cli", "net/http"}},
	// The HTTP server adapts requests to the rooms' Go APIs and holds no rule of its own: it names no
	// store type (the rooms do, each through the narrow interface it declares), so a rule that needs the
	// store cannot be written in it.
	{pattern: "plane/internal/server", rule: "`plane/internal/server`, the HTTP adapter, imports no `plane/store` package itself: it calls the rooms, and only a room reads or writes the store.", direct: true, forbidden: func(dep string) string {
		if inModule(dep, "plane/store") {
			return "the server calls the rooms; only a room reads or writes the store"
		}
		return ""
	}, breaks: []string{module + "/plane/store", module + "/plane/store/open", module + "/plane/store/storetest"},
		keeps: []string{module + "/plane/internal/jobs", module + "/plane/api", "github.com/go-chi/chi/v5"}},
	{pattern: "plane/api", rule: "`plane/api`, which every client links, imports only the standard library, `sdk/errcode` and `registry/channel`.", forbidden: func(dep string) string {
		if why := adminClient(dep); why != "" {
			return why
		}
		switch {
		case stdlib(dep), inModule(dep, "sdk/errcode"), inModule(dep, "registry/channel"):
			return ""
		}
		return "plane/api is what every client links: the standard library, sdk/errcode and registry/channel only"
	}, breaks: append([]string{module + "/registry", "github.com/santhosh-tekuri/jsonschema/v6", module + "/sdk/cli"}, adminClientBreaks...),
		keeps: []string{module + "/sdk/errcode", module + "/registry/channel", "net/url"}},
}

var (
	outsideAuthorBreaks = []string{module + "/registry/manifest", module + "/host/goplugin", module + "/agent/redact", module + "/plane/api"}
	outsideAuthorKeeps  = []string{module + "/sdk/driver/dns", module + "/sdk/word", "github.com/linode/linodego"}
	adminClientBreaks   = []string{"github.com/jackc/pgx/v5/pgxpool", "modernc.org/sqlite", "github.com/go-chi/chi/v5",
		"github.com/hashicorp/go-plugin", module + "/host/goplugin", module + "/plane/store", module + "/plane/store/storetest",
		module + "/plane/internal/server"}
)

// adminClient is the fence of what talks to the plane's admin API (the lexicon CLI, and plane/api
// itself): it links the API's types, never the plane's database drivers, router, driver host, store
// or server, so that the CLI stays a small client.
func adminClient(dep string) string {
	switch {
	case strings.HasPrefix(dep, "github.com/jackc/"):
		return "an admin client never links pgx"
	case strings.HasPrefix(dep, "modernc.org/"):
		return "an admin client never links SQLite"
	case strings.HasPrefix(dep, "github.com/go-chi/"):
		return "an admin client never links chi"
	case strings.HasPrefix(dep, "github.com/hashicorp/go-plugin"), inModule(dep, "host/goplugin"):
		return "an admin client never links go-plugin"
	case inModule(dep, "plane/store"):
		return "an admin client never links the plane's store; it speaks plane/api"
	case inModule(dep, "plane/internal"):
		return "an admin client never links the plane's internals; it speaks plane/api"
	}
	return ""
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
			deps, err := fenceDeps(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range f.violations(deps) {
				t.Error(v)
			}
		})
	}
}

// fenceDeps lists the packages under the fence's folder with their transitive, non-test imports. A
// folder that does not exist, a pattern that matches nothing and a package go list cannot load are
// errors: a fence over nothing would pass forever.
func fenceDeps(f fence) (map[string][]string, error) {
	if fi, err := os.Stat(filepath.FromSlash(f.pattern)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("fenced folder %s is missing: move the fence with the code (%v)", f.pattern, err)
	}
	pkgs, err := goList(f.env, "./"+f.pattern+"/...")
	if err != nil {
		return nil, err
	}
	deps := importsOf(pkgs, f.direct)
	if len(deps) == 0 {
		return nil, fmt.Errorf("go list found no packages under %s", f.pattern)
	}
	return deps, nil
}

// parseGoList maps each package of go list -json's stream to its transitive imports, or with direct to
// the imports in its own files, refusing a stream in which any package failed to load.
func parseGoList(r io.Reader, direct bool) (map[string][]string, error) {
	pkgs, err := readGoList(r)
	if err != nil {
		return nil, err
	}
	return importsOf(pkgs, direct), nil
}

// importsOf maps each package to its transitive imports, or with direct to the imports in its own files.
func importsOf(pkgs []listedPackage, direct bool) map[string][]string {
	deps := map[string][]string{}
	for _, p := range pkgs {
		deps[p.ImportPath] = p.Deps
		if direct {
			deps[p.ImportPath] = p.Imports
		}
	}
	return deps
}

// violations names every import of deps the fence refuses.
func (f fence) violations(deps map[string][]string) []string {
	var out []string
	for pkg, list := range deps {
		for _, dep := range list {
			if f.except != nil && f.except(pkg, dep) {
				continue
			}
			if why := f.forbidden(dep); why != "" {
				out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, dep, why))
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestFenceCatchesViolation proves every fence can fail: a package under it that imports one of the
// fence's breaks is reported, through the same check the real test runs, and one that imports only
// its keeps is not.
func TestFenceCatchesViolation(t *testing.T) {
	for _, f := range fences {
		t.Run(f.pattern, func(t *testing.T) {
			if len(f.breaks) == 0 || len(f.keeps) == 0 {
				t.Fatal("the fence names no import it refuses and none it lets through: it cannot be shown to work")
			}
			pkg := module + "/" + f.pattern + "/fenced_example"
			for _, dep := range f.breaks {
				if v := f.violations(map[string][]string{pkg: {"fmt", dep}}); len(v) != 1 {
					t.Errorf("a package under %s importing %s: %d violations, want 1: %q", f.pattern, dep, len(v), v)
				}
			}
			if v := f.violations(map[string][]string{pkg: f.keeps}); len(v) != 0 {
				t.Errorf("a package under %s importing only %q is refused: %q", f.pattern, f.keeps, v)
			}
			if (f.except != nil) != (len(f.exceptKeeps) > 0 && len(f.exceptBreaks) > 0) {
				t.Fatal("a fence with an exception names a pair it lets through and one it still refuses; one without names neither")
			}
			for _, p := range f.exceptKeeps {
				if v := f.violations(map[string][]string{p[0]: {p[1]}}); len(v) != 0 {
					t.Errorf("the exception refuses %s importing %s: %q", p[0], p[1], v)
				}
			}
			for _, p := range f.exceptBreaks {
				if v := f.violations(map[string][]string{p[0]: {p[1]}}); len(v) != 1 {
					t.Errorf("the exception lets %s import %s: %d violations, want 1", p[0], p[1], len(v))
				}
			}
		})
	}
}

// TestFenceRefusesWhatItCannotCheck: a missing folder, and a go list answer that reports a load error,
// fail the fence rather than pass it.
func TestFenceRefusesWhatItCannotCheck(t *testing.T) {
	if _, err := fenceDeps(fence{pattern: "no/such/folder", forbidden: outsideAuthor}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a fence over a missing folder: %v", err)
	}
	for name, stream := range map[string]string{
		"Error":      `{"ImportPath": "x/a", "Deps": ["fmt"]} {"ImportPath": "x/b", "Error": {"Err": "no Go files"}}`,
		"DepsErrors": `{"ImportPath": "x/a", "Deps": ["fmt"], "DepsErrors": [{"Err": "cannot find module providing package y"}]}`,
		"garbage":    `{"ImportPath": "x/a", `,
	} {
		if _, err := parseGoList(strings.NewReader(stream), false); err == nil {
			t.Errorf("go list answer with %s: accepted", name)
		}
	}
	deps, err := parseGoList(strings.NewReader(`{"ImportPath": "x/a", "Imports": ["y/b"], "Deps": ["fmt", "y/b", "y/c"]}`), false)
	if err != nil || !slices.Equal(deps["x/a"], []string{"fmt", "y/b", "y/c"}) {
		t.Fatalf("a clean answer: %v %v", deps, err)
	}
	deps, err = parseGoList(strings.NewReader(`{"ImportPath": "x/a", "Imports": ["y/b"], "Deps": ["fmt", "y/b", "y/c"]}`), true)
	if err != nil || !slices.Equal(deps["x/a"], []string{"y/b"}) {
		t.Fatalf("a clean answer, direct imports: %v %v", deps, err)
	}
}
