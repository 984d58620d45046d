// Package caps answers a word's lexicon_v1 calls: each request is checked against the capabilities and
// bounds the word's signed manifest declares, answered from the machine if allowed, and recorded.
package caps

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lexicon-fleet/lexicon/host/wasm/pkgmgr"
	"github.com/lexicon-fleet/lexicon/host/wasm/systemd"
	"github.com/lexicon-fleet/lexicon/registry/channel"
	"github.com/lexicon-fleet/lexicon/registry/manifest"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
	"github.com/lexicon-fleet/lexicon/sdk/footprint"
	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Env is what the node tells the host about itself.
type Env struct {
	// Self are the node's own names (host or host:port), what "@self" in a manifest stands for.
	Self []string
	// Systemd reaches the service manager; systemd.Unavailable answers capability.unknown.
	Systemd systemd.Manager
	// RootCAs verify net.http's TLS servers; nil means the system's roots.
	RootCAs *x509.CertPool
	// Renewal is the program exec.pinned's manifest.NodeRenewal entry runs; nil: none configured.
	Renewal *manifest.NodeProgram
	// Packages reaches the package manager; pkgmgr.Unavailable answers capability.unknown.
	Packages pkgmgr.Manager
	// PackagePolicy is the node's own narrowing of the pkg.* capabilities; nil narrows nothing.
	PackagePolicy *manifest.NodePackages
	// Converge returns the node's bounds on the footprint capabilities, its policy's "converge"
	// section, read once per invocation that needs them; nil lets them touch nothing.
	Converge func() (*footprint.Bounds, error)
	// Artifacts fetches artifacts from the plane by digest; nil: artifact.fetch answers
	// capability.unknown.
	Artifacts Fetcher
	// ConvergeDir is where the footprint capabilities keep staged artifacts, the footprint converged to
	// and the firewall's last apply; "": those that need it answer capability.unknown.
	ConvergeDir string
	// Reserved are folders no footprint capability writes beneath, whatever the bounds say: the agent's
	// own configuration and state folders, which hold the policy that draws the bounds.
	Reserved []string
	// Backup is what the backup capabilities need from the node; nil answers backup.not_configured.
	Backup *BackupEnv
}

// Call is one capability call as the invocation's record shows it.
type Call struct {
	Cap     string          `json:"cap"`
	Args    json.RawMessage `json:"args"`
	Allowed bool            `json:"allowed"`
}

// Limits on one invocation's calls.
const (
	MaxCalls       = 1000     // calls per invocation; more answer capability.budget_exceeded
	maxAuditArgs   = 4 << 10  // args bytes kept per record; larger ones are summarised
	defaultMaxRead = 1 << 20  // fs.read, journal.read, net.http, exec.pinned when no max_bytes is declared
	hardMaxRead    = 16 << 20 // no declared max_bytes may raise an answer above this
	defaultTimeout = 10 * time.Second
)

// Word is a manifest prepared for answering calls: its program schemas compiled once.
type Word struct {
	m        *manifest.Manifest
	env      *Env
	programs map[string]*program
}

type program struct {
	manifest.Program
	args  *jsonschema.Schema
	fixed []string // arguments the node pinned, put before the word's
}

// Prepare readies m's capabilities for calls under env.
func Prepare(m *manifest.Manifest, env *Env) (*Word, error) {
	if env.Systemd == nil {
		env.Systemd = systemd.Unavailable{Reason: "no service manager configured"}
	}
	if env.Packages == nil {
		env.Packages = pkgmgr.Unavailable{Reason: "no package manager configured"}
	}
	w := &Word{m: m, env: env, programs: map[string]*program{}}
	if c, ok := m.Capability(capv1.CapExecPinned); ok {
		for _, p := range c.Programs {
			s, err := p.ArgsSchema()
			if err != nil {
				return nil, err
			}
			prog := &program{Program: p, args: s}
			if p.Path == manifest.NodeRenewal {
				if env.Renewal == nil {
					continue // exec.pinned answers capability.unknown for it
				}
				prog.Path, prog.SHA256, prog.fixed = env.Renewal.Path, env.Renewal.SHA256, env.Renewal.Args
			}
			w.programs[p.Path] = prog
		}
	}
	return w, nil
}

// Invocation returns the dispatcher of one run.
func (w *Word) Invocation() *Dispatcher { return &Dispatcher{w: w, inv: &invocation{}} }

// InvocationWith returns the dispatcher of one run of a job that carries a backup grant. The grant
// stays here, in the host: no call answers with any part of it.
func (w *Word) InvocationWith(grant *channel.BackupGrant) *Dispatcher {
	return &Dispatcher{w: w, inv: &invocation{}, grant: grant}
}

// Dispatcher answers the calls of one invocation and keeps their record. It is safe for concurrent use.
// End releases what its calls hold once the run is over.
type Dispatcher struct {
	w     *Word
	inv   *invocation
	mu    sync.Mutex
	calls []Call
	n     int

	grant    *channel.BackupGrant
	backupMu sync.Mutex
	backup   *backupRun
}

// RunAgain starts a second run of the same invocation (a look stopped on the interpreter, run again
// compiled): the record keeps the first run's calls, and the call budget starts anew, so the run that
// answers has the whole of it.
func (d *Dispatcher) RunAgain() {
	d.mu.Lock()
	d.n = 0
	d.mu.Unlock()
}

// Calls returns the record so far.
func (d *Dispatcher) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Call{}, d.calls...)
}

// handler answers one capability: it checks the request against the declared bound and acts.
type handler func(ctx context.Context, w *Word, c manifest.Capability, req []byte) (any, error)

var handlers = map[string]handler{
	capv1.CapFSRead:             fsRead,
	capv1.CapFSStat:             fsStat,
	capv1.CapFSList:             fsList,
	capv1.CapFSWrite:            fsWrite,
	capv1.CapFSRemove:           fsRemove,
	capv1.CapSysFacts:           sysFacts,
	capv1.CapSysDisk:            sysDisk,
	capv1.CapSystemdUnit:        systemdUnit,
	capv1.CapSystemdRestart:     systemdRestart,
	capv1.CapSystemdResetFailed: systemdResetFailed,
	capv1.CapJournalRead:        journalRead,
	capv1.CapJournalVacuum:      journalVacuum,
	capv1.CapSystemdEnable:      systemdEnable,
	capv1.CapNetHTTP:            netHTTP,
	capv1.CapTLSPeer:            tlsPeer,
	capv1.CapExecPinned:         execPinned,
	capv1.CapPkgQuery:           pkgQuery,
	capv1.CapPkgRestarts:        pkgRestarts,
	capv1.CapPkgRefresh:         pkgRefresh,
	capv1.CapPkgUpgrade:         pkgUpgrade,
	capv1.CapPkgRepair:          pkgRepair,
	capv1.CapPkgEnsure:          pkgEnsure,
	capv1.CapArtifactFetch:      artifactFetch,
	capv1.CapFSDigest:           fsDigest,
	capv1.CapFSDiff:             fsDiff,
	capv1.CapFSInstall:          fsInstall,
	capv1.CapAccountRead:        accountRead,
	capv1.CapAccountEnsure:      accountEnsure,
	capv1.CapNFTRead:            nftRead,
	capv1.CapNFTApply:           nftApply,
	capv1.CapSysctlRead:         sysctlRead,
	capv1.CapSysctlApply:        sysctlApply,
	capv1.CapSystemdEnsure:      systemdEnsure,
	capv1.CapFootprintCheck:     footprintCheck,
	capv1.CapFootprintRead:      footprintRead,
	capv1.CapFootprintRecord:    footprintRecord,
}

// Call answers one request (JSON) with one response (JSON), and records it.
func (d *Dispatcher) Call(ctx context.Context, req []byte) []byte {
	var h struct {
		Cap string `json:"cap"`
	}
	if err := json.Unmarshal(req, &h); err != nil || h.Cap == "" {
		d.record("", nil, false)
		return ErrorResponse(errcode.New(errcode.CapabilityInvalid, "a request is one JSON object naming its cap").With(errcode.DetailField, "cap"))
	}
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	if n > MaxCalls {
		if n == MaxCalls+1 {
			d.record(h.Cap, req, false)
		}
		return ErrorResponse(errcode.New(errcode.CapabilityBudgetExceeded, "an invocation makes at most %d capability calls", MaxCalls).
			With(errcode.DetailLimit, MaxCalls))
	}
	fn, known := handlers[h.Cap]
	if bh, ok := backupHandlers[h.Cap]; ok {
		fn, known = d.bind(bh), true
	}
	declared, ok := d.w.m.Capability(h.Cap)
	if !known || !ok {
		d.record(h.Cap, req, false)
		return ErrorResponse(denied(h.Cap, "the word does not declare %s", h.Cap))
	}
	result, err := fn(context.WithValue(ctx, invocationKey{}, d.inv), d.w, declared, req)
	allowed := err == nil || !refusal(err)
	d.record(h.Cap, req, allowed)
	if err != nil {
		if ctx.Err() != nil && errcode.Code(err) == errcode.CapabilityFailed {
			err = errcode.Wrap(err, errcode.CapabilityTimeout, "%s did not finish before the word's deadline", h.Cap)
		}
		return ErrorResponse(err)
	}
	return ResultResponse(result)
}

// refusal reports whether err is the host refusing the call, rather than the call failing.
func refusal(err error) bool {
	for _, code := range []string{errcode.CapabilityDenied, errcode.CapabilityInvalid, errcode.CapabilityRootUnsafe,
		errcode.PkgOperationRefused, errcode.PkgOriginRefused, errcode.PkgNameRefused, errcode.FootprintRefused, errcode.FootprintTooLarge} {
		if errcode.Has(err, code) {
			return true
		}
	}
	return false
}

// record keeps one call, its args being the request without "cap".
func (d *Dispatcher) record(cap string, req []byte, allowed bool) {
	args := json.RawMessage("{}")
	var obj map[string]json.RawMessage
	if json.Unmarshal(req, &obj) == nil {
		delete(obj, "cap")
		if b, err := json.Marshal(obj); err == nil {
			args = b
		}
	}
	if len(args) > maxAuditArgs {
		args = summarise(obj)
	}
	d.mu.Lock()
	d.calls = append(d.calls, Call{Cap: cap, Args: args, Allowed: allowed})
	d.mu.Unlock()
}

// summarise keeps the short arguments of a large request and replaces long ones by their length, so
// the record names what was asked without carrying a file's bytes.
func summarise(obj map[string]json.RawMessage) json.RawMessage {
	out := map[string]any{}
	for k, v := range obj {
		if len(v) > 256 {
			out[k] = fmt.Sprintf("(%d bytes)", len(v))
		} else {
			out[k] = v
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// denied is capability.denied naming the capability and why.
func denied(cap, format string, args ...any) *errcode.Error {
	reason := fmt.Sprintf(format, args...)
	return errcode.New(errcode.CapabilityDenied, "%s: %s", cap, reason).With(errcode.DetailCap, cap).With(errcode.DetailReason, reason)
}

func invalid(field, format string, args ...any) *errcode.Error {
	return errcode.New(errcode.CapabilityInvalid, format, args...).With(errcode.DetailField, field)
}

// decode reads a request strictly into v: unknown fields are refused, naming the field.
func decode(req []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(req))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			return invalid(f, "unknown argument %q", f)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return invalid(te.Field, "argument %q has the wrong type", te.Field)
		}
		return errcode.Wrap(err, errcode.CapabilityInvalid, "request is not valid JSON")
	}
	return nil
}

// ErrorResponse encodes err as a capability response.
func ErrorResponse(err error) []byte {
	e := errcode.From(err, errcode.CapabilityFailed)
	body := e.Envelope().Error
	b, _ := json.Marshal(capv1.Response{Error: &body})
	return b
}

// ResultResponse encodes v as a capability response.
func ResultResponse(v any) []byte {
	r, err := json.Marshal(v)
	if err != nil {
		return ErrorResponse(errcode.Wrap(err, errcode.CapabilityFailed, "cannot encode the answer"))
	}
	b, _ := json.Marshal(capv1.Response{Result: r})
	return b
}

// maxBytes is the declared cap, or the default, never above the hard cap.
func maxBytes(c manifest.Capability) int64 {
	n := c.MaxBytes
	if n <= 0 {
		n = defaultMaxRead
	}
	return min(n, hardMaxRead)
}

// timeout is the shortest of the request's, the declared cap and the default.
func timeout(c manifest.Capability, askedMS int64) time.Duration {
	d := defaultTimeout
	if c.TimeoutMS > 0 {
		d = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	if askedMS > 0 && time.Duration(askedMS)*time.Millisecond < d {
		d = time.Duration(askedMS) * time.Millisecond
	}
	return d
}
