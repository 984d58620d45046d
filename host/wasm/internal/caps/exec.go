package caps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/cas"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// maxProgram caps the bytes of a program exec.pinned will hash and run.
const maxProgram = 256 << 20

// execPinned runs a pinned program. The file is read once, hashed, and only if the hash is the pinned
// one are those same bytes run: they are copied into a sealed memfd (no write, grow or shrink possible
// any more) and the kernel executes the memfd, so swapping the file on disk after the check changes
// nothing. The program gets no environment but PATH and LANG, "/" as its directory, its own process
// group (killed whole at the time cap), and its output is capped.
func execPinned(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.ExecPinned
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	p, ok := w.programs[req.Path]
	if !ok && req.Path == manifest.NodeRenewal && declaresProgram(c, req.Path) {
		return nil, errcode.New(errcode.CapabilityUnknown, "exec.pinned: this node's policy names no renewal program").
			With(errcode.DetailPath, req.Path).With("reason", "no renewal program is configured")
	}
	if !ok {
		return nil, denied(c.Cap, "program %q is not pinned by the manifest", req.Path).With(errcode.DetailPath, req.Path)
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	args, _ := json.Marshal(req.Args)
	if err := manifest.CheckSchema(p.args, args, errcode.CapabilityDenied, "args"); err != nil {
		e := errcode.From(err, errcode.CapabilityDenied)
		return nil, e.With(errcode.DetailCap, c.Cap).With(errcode.DetailReason, "arguments do not satisfy the program's schema").With(errcode.DetailPath, req.Path)
	}
	code, err := readPinned(c.Cap, p.Program)
	if err != nil {
		return nil, err
	}
	fd, err := sealedMemfd(req.Path, code)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "exec.pinned: cannot stage %s", req.Path).With(errcode.DetailPath, req.Path)
	}
	memfd := os.NewFile(uintptr(fd), req.Path)
	defer memfd.Close()

	limit := timeout(c, req.TimeoutMS)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// The child finds the memfd as its fd 3: without close-on-exec there, so that a script's interpreter
	// can still open /proc/self/fd/3 after the exec.
	cmd := exec.CommandContext(ctx, "/proc/self/fd/3", append(slices.Clone(p.fixed), req.Args...)...)
	cmd.Args[0] = p.Path
	cmd.ExtraFiles = []*os.File{memfd}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(req.Stdin)
	n := maxBytes(c)
	stdout, stderr := &capped{n: n}, &capped{n: n}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	out := capv1.ExecResult{
		Stdout: stdout.b.Bytes(), Stderr: stderr.b.Bytes(), Truncated: stdout.cut || stderr.cut,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000,
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, errcode.New(errcode.CapabilityTimeout, "exec.pinned: %s ran past %s and was killed", req.Path, limit).
			With(errcode.DetailPath, req.Path).With(errcode.DetailLimitMS, limit.Milliseconds())
	case errors.As(err, &exit):
		out.ExitCode = exit.ExitCode()
	case err != nil:
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "exec.pinned: cannot run %s", req.Path).With(errcode.DetailPath, req.Path)
	}
	return out, nil
}

func declaresProgram(c manifest.Capability, path string) bool {
	for _, p := range c.Programs {
		if p.Path == path {
			return true
		}
	}
	return false
}

// readPinned reads the program once and returns its bytes only if they hash to the pinned sha256.
func readPinned(cap string, p manifest.Program) ([]byte, error) {
	f, err := os.Open(p.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errcode.New(errcode.CapabilityNotFound, "%s: program %s does not exist", cap, p.Path).With(errcode.DetailPath, p.Path)
		}
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "%s: cannot open %s", cap, p.Path).With(errcode.DetailPath, p.Path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, denied(cap, "%s is not a regular file", p.Path).With(errcode.DetailPath, p.Path)
	}
	code, err := io.ReadAll(io.LimitReader(f, maxProgram+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "%s: cannot read %s", cap, p.Path).With(errcode.DetailPath, p.Path)
	}
	if len(code) > maxProgram {
		return nil, denied(cap, "%s is over %d bytes", p.Path, maxProgram).With(errcode.DetailPath, p.Path)
	}
	if got := cas.Sum(code); got != p.SHA256 {
		return nil, denied(cap, "%s hashes to %s, not the pinned %s", p.Path, got, p.SHA256).
			With(errcode.DetailPath, p.Path).With(errcode.DetailSHA256, got)
	}
	return code, nil
}

// sealedMemfd returns a close-on-exec memfd holding code, sealed against any further change.
func sealedMemfd(name string, code []byte) (int, error) {
	fd, err := unix.MemfdCreate("lexicon-pinned", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, err
	}
	if err := writeAll(fd, code); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Fchmod(fd, 0o500); err != nil {
		unix.Close(fd)
		return -1, err
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// capped keeps the first n bytes written and notes whether more came.
type capped struct {
	b   bytes.Buffer
	n   int64
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.n - int64(c.b.Len())
	if int64(len(p)) > room {
		c.b.Write(p[:max(room, 0)])
		c.cut = true
		return len(p), nil
	}
	return c.b.Write(p)
}
