package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// agentVersionSymbol is the variable an agent reports as its version (`lexicon-agent version`), which
// `make agents` stamps with -ldflags -X.
const agentVersionSymbol = "github.com/lexicon-fleet/lexicon/agent.Version"

// checkAgentVersion refuses an agent binary that does not report release as its version: a node
// probes the binary it is sent and refuses it when the version differs from the release's, and that
// refusal should come here, before anything is signed, not at rollout.
func checkAgentVersion(ctx context.Context, platform, path, release string) error {
	got, err := agentVersion(ctx, platform, path)
	if err != nil {
		return errcode.Wrap(err, errcode.ReleaseAgentMismatch, "cannot tell the version of the agent for %s (%s)", platform, path).
			With(errcode.DetailArtifact, agentSubject(platform))
	}
	if got != release {
		return errcode.New(errcode.ReleaseAgentMismatch, "the agent for %s (%s) reports version %s, the release is %s: nodes would refuse it; build it with -ldflags '-X %s=%s'",
			platform, path, got, release, agentVersionSymbol, release).With(errcode.DetailArtifact, agentSubject(platform))
	}
	return nil
}

// agentSubject is the subject an agent for platform ("linux/amd64") is pinned as.
func agentSubject(platform string) string { return "agent/" + strings.ReplaceAll(platform, "/", "-") }

// agentVersion is the version the agent binary at path reports. It is read from the binary's symbol
// table, so a binary for another platform is read as well as this one's; a binary whose symbols were
// stripped is asked (`version -o json`, as a node's probe does) when it runs here.
func agentVersion(ctx context.Context, platform, path string) (string, error) {
	v, err := elfString(path, agentVersionSymbol)
	if !errors.Is(err, errNoSymbols) {
		return v, err
	}
	if platform != runtime.GOOS+"/"+runtime.GOARCH {
		return "", fmt.Errorf("%w; a binary for another platform than this machine's is read only from its symbols (build it without -s)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version", "-o", "json")
	cmd.Env = []string{}
	cmd.Dir = "/"
	out, runErr := cmd.Output()
	if runErr != nil {
		return "", fmt.Errorf("%w, and it did not answer version: %w", err, runErr)
	}
	var answer struct{ Version string }
	if err := json.Unmarshal(out, &answer); err != nil || answer.Version == "" {
		return "", errors.New("its answer to version is not the agent's")
	}
	return answer.Version, nil
}

// errNoSymbols is an executable whose symbol table was stripped (go build -ldflags -s).
var errNoSymbols = errors.New("its symbol table was stripped")

// elfString reads the Go string variable name from the ELF executable at path: the string header
// (pointer, length) at the symbol's address, then the bytes it points to.
func elfString(path, name string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("it is not an ELF executable: %w", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return "", errNoSymbols
	}
	word := 8
	if f.Class == elf.ELFCLASS32 {
		word = 4
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		header, err := readAddr(f, s.Value, uint64(2*word))
		if err != nil {
			return "", err
		}
		uint := func(b []byte) uint64 {
			if word == 4 {
				return uint64(f.ByteOrder.Uint32(b))
			}
			return f.ByteOrder.Uint64(b)
		}
		ptr, n := uint(header[:word]), uint(header[word:])
		if n == 0 || n > 256 {
			return "", fmt.Errorf("%s is %d bytes long, not a version", name, n)
		}
		data, err := readAddr(f, ptr, n)
		if err != nil {
			return "", err
		}
		if bytes.ContainsFunc(data, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("%s holds control characters, not a version", name)
		}
		return string(data), nil
	}
	return "", fmt.Errorf("it has no %s: is it an agent?", strings.TrimPrefix(name, "github.com/lexicon-fleet/lexicon/"))
}

// readAddr reads n bytes at the virtual address addr from the section of f that holds them.
func readAddr(f *elf.File, addr, n uint64) ([]byte, error) {
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 || addr < s.Addr || addr+n > s.Addr+s.Size || addr+n < addr {
			continue
		}
		buf := make([]byte, n)
		if _, err := s.ReadAt(buf, int64(addr-s.Addr)); err != nil {
			return nil, fmt.Errorf("reading %#x: %w", addr, err)
		}
		return buf, nil
	}
	return nil, fmt.Errorf("no section holds %#x", addr)
}
