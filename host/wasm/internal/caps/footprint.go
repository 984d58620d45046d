package caps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Fetcher gets artifacts from the plane: the channel's artifact route, artifact?sha256=<hex>, reading at
// most limit bytes. The agent's channel client is one.
type Fetcher interface {
	Artifact(ctx context.Context, query url.Values, limit int64) ([]byte, error)
}

// The files the footprint capabilities keep in Env.ConvergeDir.
const (
	recordFile = "footprint.json" // the footprint converged to and the actions still owed
	nftFile    = "nft.json"       // the firewall's last apply
	stagedDir  = "staged"         // artifacts fetched by digest, a cas store
)

// fault, when set, is called at the named steps of the footprint capabilities. Only tests set it
// (SetFault), to kill the process at a step and check what the next run finds.
var fault func(step string)

// SetFault sets the function called at each named step ("artifact.staged", "fs.install.half",
// "fs.install.renamed", "systemd.before_restart"); nil removes it. For tests only.
func SetFault(f func(step string)) { fault = f }

func step(name string) {
	if fault != nil {
		fault(name)
	}
}

// invocation is what one run's calls share: the node's bounds, read once when the first footprint
// capability needs them, so one converge is judged by one reading of the policy.
type invocation struct {
	once   sync.Once
	bounds *footprint.Bounds
	err    error

	mu       sync.Mutex
	accounts *accounts // /etc/passwd and /etc/group as last read; account.ensure forgets them
}

type invocationKey struct{}

func invocationOf(ctx context.Context) *invocation {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		return inv
	}
	return &invocation{}
}

// nodeBounds returns the node's bounds for this invocation. No Converge function means bounds that
// allow nothing; a policy that cannot be read refuses everything, saying why.
func nodeBounds(ctx context.Context, w *Word) (*footprint.Bounds, error) {
	inv := invocationOf(ctx)
	inv.once.Do(func() {
		if w.env.Converge == nil {
			inv.bounds = &footprint.Bounds{}
			return
		}
		inv.bounds, inv.err = w.env.Converge()
		if inv.bounds == nil && inv.err == nil {
			inv.bounds = &footprint.Bounds{}
		}
	})
	return inv.bounds, inv.err
}

// refused is footprint.refused (or the refusal's own code) for one item.
func refused(r capv1.Refusal) *errcode.Error {
	e := errcode.New(r.Code, "%s: %s", r.Item, r.Reason).With(errcode.DetailItem, r.Item).With(errcode.DetailReason, r.Reason)
	return e
}

// itemRefusal checks one item of fp against everything that bounds a converge on this node: the word's
// signed manifest (the capability that would act on the item must be declared and its bound must hold
// the item), the agent's own folders, and the node's policy. ok is true when the item may be touched.
func itemRefusal(ctx context.Context, w *Word, fp *footprint.Footprint, it footprint.Item) (capv1.Refusal, bool) {
	no := func(code, format string, args ...any) (capv1.Refusal, bool) {
		return capv1.Refusal{Item: it.ID, Code: code, Reason: fmt.Sprintf(format, args...)}, false
	}
	word := func(cap string) (manifest.Capability, bool) { return w.m.Capability(cap) }
	switch it.Kind {
	case footprint.KindFile:
		f := fp.Files[it.Index]
		c, ok := word(capv1.CapFSInstall)
		if !ok {
			return no(errcode.FootprintRefused, "the converge word's manifest declares no %s", capv1.CapFSInstall)
		}
		if _, ok := footprint.Root(c.Paths, f.Path); !ok {
			return no(errcode.FootprintRefused, "the converge word's manifest lets it write beneath %s only", list(c.Paths))
		}
		if r := reservedRoot(w, f.Path); r != "" {
			return no(errcode.FootprintRefused, "%s is the agent's own folder, which converge never writes, whatever the policy says", r)
		}
		if limit := fileLimit(w); f.Size > limit {
			return no(errcode.FootprintTooLarge, "%d bytes is over the converge word's limit of %d", f.Size, limit)
		}
	case footprint.KindUnit:
		c, ok := word(capv1.CapSystemdEnsure)
		if !ok || !matchAny(c.Units, it.Key) {
			return no(errcode.FootprintRefused, "the converge word's manifest does not let it manage %s", it.Key)
		}
	case footprint.KindUser, footprint.KindGroup:
		c, ok := word(capv1.CapAccountEnsure)
		if !ok || !matchAny(c.Names, it.Key) {
			return no(errcode.FootprintRefused, "the converge word's manifest does not let it manage %s", it.Key)
		}
		if it.Kind == footprint.KindUser {
			for _, g := range fp.Users[it.Index].Groups {
				if !matchAny(c.Names, g) {
					return no(errcode.FootprintRefused, "the converge word's manifest does not let it put users in %s", g)
				}
			}
		}
	case footprint.KindFirewall:
		if _, ok := word(capv1.CapNFTApply); !ok {
			return no(errcode.FootprintRefused, "the converge word's manifest declares no %s", capv1.CapNFTApply)
		}
	case footprint.KindSysctl:
		c, ok := word(capv1.CapSysctlApply)
		if !ok || !matchAny(c.Names, it.Key) {
			return no(errcode.FootprintRefused, "the converge word's manifest does not let it set %s", it.Key)
		}
	case footprint.KindPackage:
		c, ok := word(capv1.CapPkgEnsure)
		if !ok || !manifest.MatchAnyPackage(c.Packages, it.Key) {
			return no(errcode.FootprintRefused, "the converge word's manifest does not let it manage package %s", it.Key)
		}
		if !w.env.PackagePolicy.AllowsOperation(capv1.CapPkgEnsure) {
			return no(errcode.FootprintRefused, "the node's package policy does not allow the package operation \"ensure\"")
		}
		if !w.env.PackagePolicy.AllowsName(it.Key) {
			return no(errcode.FootprintRefused, "the node's package policy does not allow package %s", it.Key)
		}
	}
	b, err := nodeBounds(ctx, w)
	if err != nil {
		return no(errcode.FootprintRefused, "the node's policy cannot be read, so converge may touch nothing: %s", errcode.From(err, errcode.InternalError).Message)
	}
	return b.Refusal(fp, it)
}

// check refuses a change to the one item of fp unless everything that bounds a converge allows it.
func check(ctx context.Context, w *Word, fp *footprint.Footprint) error {
	for _, it := range footprint.Items(fp) {
		if r, ok := itemRefusal(ctx, w, fp, it); !ok {
			return refused(r)
		}
	}
	return nil
}

func list(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	return fmt.Sprint(l)
}

// reservedRoot returns the agent folder p lies beneath, or "".
func reservedRoot(w *Word, p string) string {
	if r, ok := footprint.Root(w.env.Reserved, p); ok {
		return r
	}
	return ""
}

// fileLimit is the largest file the word may install: the smaller of artifact.fetch's and fs.install's
// declared max_bytes, never above hardMaxArtifact.
func fileLimit(w *Word) int64 {
	n := int64(defaultMaxArtifact)
	if c, ok := w.m.Capability(capv1.CapArtifactFetch); ok && c.MaxBytes > 0 {
		n = c.MaxBytes
	}
	if c, ok := w.m.Capability(capv1.CapFSInstall); ok && c.MaxBytes > 0 && c.MaxBytes < n {
		n = c.MaxBytes
	}
	return min(n, hardMaxArtifact)
}

// Limits of artifacts.
const (
	defaultMaxArtifact = 16 << 20
	hardMaxArtifact    = 64 << 20 // held in memory while it is fetched and checked
)

// convergeDir returns the folder the footprint capabilities keep their state in, or capability.unknown.
func convergeDir(w *Word, cap string) (string, error) {
	if w.env.ConvergeDir == "" {
		return "", errcode.New(errcode.CapabilityUnknown, "%s: this host keeps no converge state", cap).With(errcode.DetailReason, "no converge folder configured")
	}
	if err := os.MkdirAll(w.env.ConvergeDir, 0o700); err != nil {
		return "", errcode.Wrap(err, errcode.CapabilityFailed, "%s: cannot make the converge folder", cap)
	}
	return w.env.ConvergeDir, nil
}

func footprintCheck(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FootprintCheck
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	fp, err := footprint.Decode(req.Footprint)
	if err != nil {
		return nil, err
	}
	out := capv1.FootprintCheckResult{Refused: []capv1.Refusal{}}
	for _, it := range footprint.Items(fp) {
		if r, ok := itemRefusal(ctx, w, fp, it); !ok {
			out.Refused = append(out.Refused, r)
		}
	}
	return out, nil
}

// record is the file keeping the footprint converged to and the actions owed.
type record struct {
	Footprint json.RawMessage `json:"footprint,omitempty"`
	Pending   []capv1.Pending `json:"pending"`
}

func readRecord(dir string) (record, error) {
	var r record
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return record{Pending: []capv1.Pending{}}, nil
	}
	if err != nil {
		return r, errcode.Wrap(err, errcode.CapabilityFailed, "cannot read the converge record")
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, errcode.Wrap(err, errcode.CapabilityFailed, "the converge record is not JSON")
	}
	if r.Pending == nil {
		r.Pending = []capv1.Pending{}
	}
	return r, nil
}

func footprintRead(_ context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FootprintRead
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	dir, err := convergeDir(w, c.Cap)
	if err != nil {
		return nil, err
	}
	r, err := readRecord(dir)
	if err != nil {
		return nil, err
	}
	return capv1.FootprintReadResult{Footprint: r.Footprint, Pending: r.Pending}, nil
}

func footprintRecord(ctx context.Context, w *Word, c manifest.Capability, raw []byte) (any, error) {
	var req capv1.FootprintRecord
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	dir, err := convergeDir(w, c.Cap)
	if err != nil {
		return nil, err
	}
	r, err := readRecord(dir)
	if err != nil {
		return nil, err
	}
	if len(req.Footprint) > 0 {
		fp, err := footprint.Decode(req.Footprint)
		if err != nil {
			return nil, err
		}
		// The record is what the drift recipes compare the node with and what enforce repairs to: it
		// holds only what the bounds let converge touch.
		if err := check(ctx, w, fp); err != nil {
			return nil, err
		}
		r.Footprint = req.Footprint
	}
	for i, p := range req.Pending {
		switch {
		case p.Action == "daemon-reload" && p.Unit == "":
		case (p.Action == "restart" || p.Action == "reload") && footprint.ValidUnitName(p.Unit) && matchAny(systemdUnits(w), p.Unit):
		default:
			return nil, invalid(fmt.Sprintf("pending[%d]", i), "an owed action is daemon-reload, or restart or reload of a unit the word may manage")
		}
	}
	r.Pending = req.Pending
	if r.Pending == nil {
		r.Pending = []capv1.Pending{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot encode the converge record")
	}
	if err := writeState(dir, recordFile, b); err != nil {
		return nil, errcode.Wrap(err, errcode.CapabilityFailed, "cannot write the converge record")
	}
	return capv1.FootprintRecordResult{Pending: len(r.Pending)}, nil
}

func systemdUnits(w *Word) []string {
	c, _ := w.m.Capability(capv1.CapSystemdEnsure)
	return c.Units
}

// writeState replaces dir/name with data durably: a temporary file in dir, synced, renamed over the
// name, and dir synced, so a crash leaves the old record or the new one.
func writeState(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
