package lexicon_test

// Golden lists of what a program links, in the manner of tailscale's depaware: every package the
// agent binary links, and every package a word links through the SDK, is checked in beside the
// program. A new dependency shows up as a changed line in review instead of going unnoticed into
// every node. Regenerate with `make depaware` (go test -run TestGoldenDeps . -update).

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden dependency lists (depaware.txt) from what the programs link now")

// golden is one program whose linked packages are kept in a checked-in list.
type golden struct {
	pkg  string   // the package built, relative to the module root
	file string   // the checked-in list, relative to the module root
	env  []string // the platform it is built for, as the Makefile builds it
	what string   // the program and its platform, for the list's header
}

var goldens = []golden{
	{pkg: "agent/cmd/lexicon-agent", file: "agent/cmd/lexicon-agent/depaware.txt",
		env: []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, what: "lexicon-agent, built for linux/amd64 with CGO_ENABLED=0 as `make agents` builds it"},
	{pkg: "sdk/word", file: "sdk/word/depaware.txt",
		env: []string{"GOOS=wasip1", "GOARCH=wasm"}, what: "sdk/word built for wasip1/wasm, the least that every word links"},
}

func TestGoldenDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of a program's whole graph is slow")
	}
	for _, g := range goldens {
		t.Run(g.pkg, func(t *testing.T) {
			pkgs, err := linkedPackages(g)
			if err != nil {
				t.Fatal(err)
			}
			got := depawareList(g, pkgs)
			path := filepath.FromSlash(g.file)
			if *updateGolden {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (make depaware writes it)", err)
			}
			if d := listDiff(want, got); d != "" {
				t.Errorf("%s links other packages than %s lists; review the change, then run `make depaware` and commit the list:\n%s", g.pkg, g.file, d)
			}
		})
	}
}

// linkedPackages lists the program's package and every package it links, for the program's platform.
// A package that fails to load is an error: the list would silently miss what it imports.
func linkedPackages(g golden) ([]listedPackage, error) {
	pkgs, err := goList(g.env, "-deps", "./"+g.pkg)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list found nothing for %s", g.pkg)
	}
	return pkgs, nil
}

// depawareList renders the golden list: one line per linked package, sorted, with the first package
// of the program (in sort order) that imports it, and + when others do too, so a new line says who
// brought it in. The standard library's internal and vendored packages are left out: they follow the
// Go release, not a choice made here, and would churn the list at every toolchain update. They are
// named as importers only of what nothing listed imports.
func depawareList(g golden, pkgs []listedPackage) []byte {
	importers, hidden := map[string][]string{}, map[string][]string{}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if p.Standard && toolchainInternal(p.ImportPath) {
				hidden[imp] = append(hidden[imp], p.ImportPath)
			} else {
				importers[imp] = append(importers[imp], p.ImportPath)
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Every package linked by %s.\n", g.what)
	b.WriteString("# A change to this list is a change to what the program links: review it, then regenerate with\n")
	b.WriteString("# `make depaware`. Each line names the first importing package, with + when there are more.\n")
	var lines []string
	for _, p := range pkgs {
		if p.Standard && toolchainInternal(p.ImportPath) {
			continue
		}
		line := p.ImportPath
		from := importers[p.ImportPath]
		if len(from) == 0 {
			from = hidden[p.ImportPath]
		}
		if len(from) > 0 {
			slices.Sort(from)
			line += " from " + from[0]
			if len(from) > 1 {
				line += "+"
			}
		}
		lines = append(lines, line)
	}
	slices.Sort(lines)
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}

// toolchainInternal reports a standard-library package no program imports by choice.
func toolchainInternal(path string) bool {
	return strings.HasPrefix(path, "vendor/") || slices.Contains(strings.Split(path, "/"), "internal")
}

// listDiff names the lines only want has (-) and only got has (+), comments left out, or "" when the
// two lists hold the same lines.
func listDiff(want, got []byte) string {
	lines := func(b []byte) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" && !strings.HasPrefix(l, "#") {
				m[l] = true
			}
		}
		return m
	}
	w, g := lines(want), lines(got)
	var out []string
	for l := range w {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range g {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	// Sorted by package, - before +, so a package whose importer changed shows its two lines together.
	key := func(l string) string { return strings.Fields(l[2:])[0] + map[byte]string{'-': " 0", '+': " 1"}[l[0]] }
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	return strings.Join(out, "\n")
}

// TestGoldenDepsCatchesChange shows the check can fail: a package added, one removed, and one whose
// importer changed are each reported, and the same lines in another order are not.
func TestGoldenDepsCatchesChange(t *testing.T) {
	g := golden{pkg: "x/cmd", what: "x"}
	pkgs := []listedPackage{
		{ImportPath: "x/cmd", Imports: []string{"fmt", "x/a"}},
		{ImportPath: "x/a", Imports: []string{"fmt", "example.com/dep", "internal/abi"}},
		{ImportPath: "fmt", Standard: true, Imports: []string{"internal/abi"}},
		{ImportPath: "internal/abi", Standard: true},
		{ImportPath: "example.com/dep"},
	}
	base := depawareList(g, pkgs)
	if strings.Contains(string(base), "internal/abi") {
		t.Errorf("the toolchain's internal packages are listed:\n%s", base)
	}
	if !strings.Contains(string(base), "\nfmt from x/a+\n") || !strings.Contains(string(base), "\nexample.com/dep from x/a\n") {
		t.Errorf("a line does not name its importer:\n%s", base)
	}
	added := append(slices.Clone(pkgs), listedPackage{ImportPath: "example.com/new"})
	added[0].Imports = append(slices.Clone(added[0].Imports), "example.com/new")
	removed := slices.Clone(pkgs[:4])
	removed[1].Imports = []string{"fmt"}
	moved := slices.Clone(pkgs)
	moved[0].Imports = []string{"fmt", "x/a", "example.com/dep"}
	for name, c := range map[string]struct {
		pkgs []listedPackage
		want string
	}{
		"added":   {added, "+ example.com/new from x/cmd"},
		"removed": {removed, "- example.com/dep from x/a"},
		"moved":   {moved, "- example.com/dep from x/a\n+ example.com/dep from x/a+"},
	} {
		if d := listDiff(base, depawareList(g, c.pkgs)); !strings.Contains(d, c.want) {
			t.Errorf("%s: diff %q, want it to hold %q", name, d, c.want)
		}
	}
	reversed := slices.Clone(pkgs)
	slices.Reverse(reversed)
	if d := listDiff(base, depawareList(g, reversed)); d != "" {
		t.Errorf("the same packages in another order: %q", d)
	}
}
