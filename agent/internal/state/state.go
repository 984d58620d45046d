// Package state is the agent's state folder: the node key, the pairing with a plane, and the paths of
// everything the agent keeps.
//
//	<state>/node.key       the node's private key, 0600
//	<state>/node.pub       its public key in authorized_keys form (ssh-keygen -lf node.pub)
//	<state>/pairing.json   the plane, its CA, the join and, once approved, the node id
//	<state>/modules/       statements and modules by sha256, re-hashed on every load; beside them the
//	                       log checkpoints the node holds (checkpoints, 0600, replaced whole) and the
//	                       consistency proofs its current statement was verified with (log_proofs)
//	<state>/wasm-cache/    compiled words, sealed by <state>/wasm-cache.key
//	<state>/job.lock       held while a job, a repair or a `word run` runs
//	<state>/recipes/       the recipe loop: ledger/<recipe>.jsonl, cases/<recipe>.json, case_seq
//	<state>/update/        the agent's own update: state.json, staged and fallback binaries
package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// DefaultDir is the state folder of an agent installed as a service.
const DefaultDir = "/var/lib/lexicon-agent"

// Dir is an agent state folder.
type Dir string

// Open makes sure the folder exists, readable by its owner only.
func Open(path string) (Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return "", errcode.Wrap(err, errcode.IOFailed, "cannot create state folder %s", path)
	}
	return Dir(path), nil
}

func (d Dir) path(name string) string { return filepath.Join(string(d), name) }

// KeyFile, PubFile and the rest name the files of the folder.
func (d Dir) KeyFile() string      { return d.path("node.key") }
func (d Dir) PubFile() string      { return d.path("node.pub") }
func (d Dir) ModulesDir() string   { return d.path("modules") }
func (d Dir) WasmCache() string    { return d.path("wasm-cache") }
func (d Dir) WasmCacheKey() string { return d.path("wasm-cache.key") }
func (d Dir) LockFile() string     { return d.path("job.lock") }
func (d Dir) RecipesDir() string   { return d.path("recipes") }
func (d Dir) UpdateDir() string    { return d.path("update") }
func (d Dir) ConvergeDir() string  { return d.path("converge") }
func (d Dir) BackupDir() string    { return d.path("backup") }
func (d Dir) pairingFile() string  { return d.path("pairing.json") }

// Key returns the node key, making one (0600) if there is none.
func (d Dir) Key() (keys.NodePrivate, bool, error) {
	k, err := keys.ReadNodePrivateFile(d.KeyFile())
	if err == nil {
		return k, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return keys.NodePrivate{}, false, err
	}
	k = keys.NewNode()
	if err := keys.WritePrivate(d.KeyFile(), k.String()); err != nil {
		return keys.NodePrivate{}, false, err
	}
	_ = os.Remove(d.PubFile())
	if err := os.WriteFile(d.PubFile(), []byte(k.Public().AuthorizedKey()), 0o644); err != nil {
		return keys.NodePrivate{}, false, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", d.PubFile())
	}
	return k, true, nil
}

// ExistingKey returns the node key, or agent.not_joined when there is none.
func (d Dir) ExistingKey() (keys.NodePrivate, error) {
	k, err := keys.ReadNodePrivateFile(d.KeyFile())
	if errors.Is(err, fs.ErrNotExist) {
		return k, errcode.New(errcode.AgentNotJoined, "no node key in %s; run lexicon-agent join", d)
	}
	return k, err
}

// RetireKey removes a key the plane rejected, so the next join comes with a fresh one.
func (d Dir) RetireKey() error {
	for _, f := range []string{d.KeyFile(), d.PubFile(), d.pairingFile()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errcode.Wrap(err, errcode.IOFailed, "cannot remove %s", f)
		}
	}
	return nil
}

// Pairing is what the agent knows of its plane.
type Pairing struct {
	Plane       string `json:"plane"`
	CA          string `json:"ca,omitempty"` // path of the plane's CA certificate, if not a public one
	JoinID      string `json:"join_id"`
	Fingerprint string `json:"fingerprint"`
	Status      string `json:"status"`
	NodeID      string `json:"node_id,omitempty"`
}

// Pairing reads pairing.json; agent.not_joined when there is none.
func (d Dir) Pairing() (Pairing, error) {
	var p Pairing
	data, err := os.ReadFile(d.pairingFile())
	if errors.Is(err, fs.ErrNotExist) {
		return p, errcode.New(errcode.AgentNotJoined, "this agent has not joined a plane; run lexicon-agent join --plane URL")
	}
	if err != nil {
		return p, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", d.pairingFile())
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, errcode.Wrap(err, errcode.IOFailed, "%s is not valid", d.pairingFile())
	}
	return p, nil
}

// SavePairing writes pairing.json atomically.
func (d Dir) SavePairing(p Pairing) error {
	data, _ := json.MarshalIndent(p, "", "  ")
	tmp := d.pairingFile() + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", tmp)
	}
	if err := os.Rename(tmp, d.pairingFile()); err != nil {
		return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", d.pairingFile())
	}
	return nil
}

// ForgetPairing removes the pairing (after leave) but keeps the key.
func (d Dir) ForgetPairing() error {
	if err := os.Remove(d.pairingFile()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errcode.Wrap(err, errcode.IOFailed, "cannot remove %s", d.pairingFile())
	}
	return nil
}
