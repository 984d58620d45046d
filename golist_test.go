package lexicon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// listedPackage is the part of go list -json that the fences and the golden lists read.
type listedPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
	Error      *struct{ Err string }
	DepsErrors []struct{ Err string }
}

// goList runs go list -e -json with env added and args after it, and reads its answer.
func goList(env []string, args ...string) ([]listedPackage, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,Deps,Standard,Error,DepsErrors"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %v: %v\n%s", args, err, stderr.String())
	}
	pkgs, err := readGoList(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("go list %v: %w", args, err)
	}
	return pkgs, nil
}

// readGoList reads go list -json's stream, refusing one in which any package, or any of its
// dependencies, failed to load: its imports would be unknown, so nothing could be checked against them.
func readGoList(r io.Reader) ([]listedPackage, error) {
	var pkgs []listedPackage
	var errs []error
	dec := json.NewDecoder(r)
	for {
		var p listedPackage
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading go list's answer: %w", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err))
		}
		for _, e := range p.DepsErrors {
			errs = append(errs, fmt.Errorf("%s: dependency: %s", p.ImportPath, e.Err))
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, errors.Join(errs...)
}

// notOurs reports whether a folder met walking the repository holds none of the code its checks are
// about: hidden folders, fixtures, build output, node modules and the third-party sources it carries.
func notOurs(name string) bool {
	switch name {
	case "testdata", "build", "node_modules", "vendor", "third_party":
		return true
	}
	return strings.HasPrefix(name, ".")
}
