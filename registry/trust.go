package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A trust directory holds what a verifier believes:
//
//	statement_keys/*.pub  held publisher keys, one per line; chain.pub is appended to as keys are learned
//	log_keys/*.pub        transparency-log keys; holding any turns on the log requirement for good
//	witnesses             optional: at least k of these witnesses must cosign each log checkpoint
//	state                 JSON: highest sequence accepted, its statement digest, and the log ratchet
//
// and, for standard Sigstore verifiers (cosign, sigstore-js, sigstore-go), which Lexicon's verifier
// never reads:
//
//	trusted_root.json     the Sigstore trusted root naming the held logs and their timestamp authorities
//	statement_keys/*.pem  each publisher key held at init, as a PKIX PEM public key
//
// Lines of a statement_keys file:
//
//	publisher-key:<b64>                    held for every sequence
//	publisher-key:<b64> from <N>           held from sequence N (learned from a key chain)
//	retire publisher-key:<b64> from <N>    may not sign sequence N or later
const (
	statementKeysDir = "statement_keys"
	logKeysDir       = "log_keys"
	stateFile        = "state"
	chainFile        = "chain.pub"
)

// State is what a verifier remembers between runs.
type State struct {
	Sequence   uint64 `json:"sequence"`
	Statement  string `json:"statement,omitempty"`
	RequireLog bool   `json:"require_log,omitempty"`
}

// heldKey is a publisher key a verifier holds and the sequences it may sign.
type heldKey struct {
	key     keys.PublisherPublic
	from    uint64 // may sign sequences >= from
	retired uint64 // may not sign sequences >= retired; 0 means never retired
}

// retiredFrom is the sequence a retirement "from n" takes effect at. Sequences start at 1, so a
// retirement from 0 is one from 1; it must not read as 0, which means never retired.
func retiredFrom(n uint64) uint64 { return max(n, 1) }

func (h heldKey) validAt(seq uint64) bool {
	return seq >= h.from && (h.retired == 0 || seq < h.retired)
}

// Trust is a loaded trust directory.
type Trust struct {
	dir   string
	held  map[string]heldKey // by fingerprint
	logs  []keys.LogPublic
	state State
	view  logView
}

// OpenTrust loads a trust directory. Every file and folder in it must pass keys.CheckTrusted.
func OpenTrust(dir string) (*Trust, error) {
	t := &Trust{dir: dir, held: map[string]heldKey{}}
	for _, d := range []string{dir, filepath.Join(dir, statementKeysDir)} {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot open trust directory %s", d)
		}
		if err := keys.CheckTrusted(d, fi); err != nil {
			return nil, err
		}
	}
	files, err := trustFiles(filepath.Join(dir, statementKeysDir))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := keys.ReadTrusted(f)
		if err != nil {
			return nil, err
		}
		for i, line := range keys.Lines(data) {
			if err := t.addLine(line); err != nil {
				return nil, fmt.Errorf("%s line %d: %w", f, i+1, err)
			}
		}
	}
	if len(t.held) == 0 {
		return nil, errcode.New(errcode.KeyMalformed, "trust directory %s holds no statement key", dir)
	}
	logFiles, err := trustFiles(filepath.Join(dir, logKeysDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, f := range logFiles {
		data, err := keys.ReadTrusted(f)
		if err != nil {
			return nil, err
		}
		for _, line := range keys.Lines(data) {
			lk, err := keys.ParseLogPublic(line)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			t.logs = append(t.logs, lk)
		}
	}
	if err := t.readWitnesses(); err != nil {
		return nil, err
	}
	if err := t.readState(); err != nil {
		return nil, err
	}
	return t, nil
}

func trustFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot list %s", dir)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pub") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// addLine applies one statement_keys line. Retirements only ever tighten, and a key held twice keeps
// the earliest start.
func (t *Trust) addLine(line string) error {
	f := strings.Fields(line)
	retire := len(f) > 0 && f[0] == "retire"
	if retire {
		f = f[1:]
	}
	if len(f) != 1 && !(len(f) == 3 && f[1] == "from") {
		return errcode.New(errcode.KeyMalformed, "expected [retire] publisher-key:... [from N], got %q", line)
	}
	k, err := keys.ParsePublisherPublic(f[0])
	if err != nil {
		return err
	}
	var from uint64
	if len(f) == 3 {
		if from, err = strconv.ParseUint(f[2], 10, 64); err != nil {
			return errcode.New(errcode.KeyMalformed, "bad sequence in %q", line)
		}
	}
	if retire {
		from = retiredFrom(from)
	}
	fp := k.Fingerprint()
	h, ok := t.held[fp]
	switch {
	case retire && (h.retired == 0 || from < h.retired):
		h.key, h.retired = k, from
		if !ok {
			h.from = ^uint64(0) // retired before it was ever held: never valid
		}
	case retire:
	case !ok:
		h = heldKey{key: k, from: from}
	case from < h.from:
		h.from = from
	}
	t.held[fp] = h
	return nil
}

func (t *Trust) readState() error {
	path := filepath.Join(t.dir, stateFile)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	data, err := keys.ReadTrusted(path)
	if err != nil {
		return err
	}
	st, err := parseState(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t.state = st
	return nil
}

// parseState reads the state file's bytes: one JSON object, known fields only, under keys.MaxFileSize.
func parseState(data []byte) (State, error) {
	var st State
	if err := strictjson.Decode(data, keys.MaxFileSize, &st); err != nil {
		if errors.Is(err, strictjson.ErrTooLarge) {
			return State{}, errcode.New(errcode.StatementTooLarge, "trust state is over %d bytes", keys.MaxFileSize).With(errcode.DetailLayer, "state")
		}
		return State{}, errcode.Wrap(err, errcode.StatementMalformed, "trust state is not valid").With(errcode.DetailLayer, "state")
	}
	return st, nil
}

// State returns what the trust directory remembers.
func (t *Trust) State() State { return t.state }

// LogKeys returns the held transparency-log keys.
func (t *Trust) LogKeys() []keys.LogPublic { return slices.Clone(t.logs) }

// RequiresLog reports whether statements must carry a log entry: once log keys were ever held, always.
func (t *Trust) RequiresLog() bool { return len(t.logs) > 0 || t.state.RequireLog }

// Accept records a verified release: the keys and retirements its chain taught, the log checkpoints it
// was verified under (when HoldCheckpoints named a file), then the new highest sequence. Each step
// only tightens, so a crash between two leaves the node stricter, never looser.
func (t *Trust) Accept(r *Release) error {
	if err := keys.AppendLines(filepath.Join(t.dir, statementKeysDir, chainFile), r.learned); err != nil {
		return err
	}
	for _, line := range r.learned {
		_ = t.addLine(line) // lines we wrote ourselves
	}
	if err := t.acceptCheckpoints(r); err != nil {
		return err
	}
	next := State{Sequence: r.Statement.Predicate.Sequence, Statement: r.Digest, RequireLog: t.RequiresLog()}
	if next.Sequence < t.state.Sequence {
		return errcode.New(errcode.StatementRollback, "sequence %d is below the accepted %d", next.Sequence, t.state.Sequence)
	}
	if next == t.state {
		return nil // the statement this folder holds, accepted again (an agent starting): nothing to write
	}
	data, _ := json.Marshal(next)
	if err := keys.ReplaceFile(filepath.Join(t.dir, stateFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	t.state = next
	return nil
}

// InitTrust creates a trust directory holding the given publisher keys and, optionally, log keys, with
// the standard trusted root (naming the logs and the timestamp authorities tsas) and PEM keys beside
// them. It refuses a directory that already holds statement keys.
func InitTrust(dir string, publishers []keys.PublisherPublic, logs []keys.LogPublic, tsas ...TimestampAuthority) error {
	rootJSON, err := TrustedRootJSON(logs, tsas)
	if err != nil {
		return err
	}
	sk := filepath.Join(dir, statementKeysDir)
	if err := os.MkdirAll(sk, 0o755); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot create %s", sk)
	}
	for _, p := range publishers {
		name := strings.NewReplacer("SHA256:", "", "/", "_", "+", "-").Replace(p.Fingerprint())[:16]
		if err := keys.WritePublic(filepath.Join(sk, name+".pub"), p.String()); err != nil {
			return err
		}
		if err := keys.CreateExclusive(filepath.Join(sk, name+".pem"), p.PEM(), 0o644); err != nil {
			return err
		}
	}
	if len(logs) > 0 {
		lk := filepath.Join(dir, logKeysDir)
		if err := os.MkdirAll(lk, 0o755); err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot create %s", lk)
		}
		for i, l := range logs {
			if err := keys.WritePublic(filepath.Join(lk, fmt.Sprintf("%s-%d.pub", l.Origin(), i)), l.String()); err != nil {
				return err
			}
		}
	}
	return keys.CreateExclusive(filepath.Join(dir, TrustedRootFile), rootJSON, 0o644)
}
