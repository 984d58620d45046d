package main

import (
	"flag"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/agent/internal/client"

	"github.com/lexicon-fleet/lexicon/agent/internal/state"
	"github.com/lexicon-fleet/lexicon/agent/internal/vocab"
	"github.com/lexicon-fleet/lexicon/agent/policy"
)

// DefaultConfigDir holds policy.json and the trust folder; it is the admin's, the agent only reads it
// (and records accepted sequences in trust/state).
const DefaultConfigDir = "/etc/lexicon-agent"

// dirs are the folders every command works in.
type dirs struct{ state, config string }

func (d *dirs) setup(fs *flag.FlagSet) {
	fs.StringVar(&d.state, "state-dir", state.DefaultDir, "state folder: node key, pairing, cached modules")
	fs.StringVar(&d.config, "config-dir", DefaultConfigDir, "config folder: policy.json and trust/")
}

func (d *dirs) open() (state.Dir, error) { return state.Open(d.state) }
func (d *dirs) policyFile() string       { return filepath.Join(d.config, policy.FileName) }
func (d *dirs) trustDir() string         { return filepath.Join(d.config, "trust") }

// vocabulary opens the state folder and the vocabulary the node last accepted.
func (d *dirs) vocabulary() (state.Dir, *vocab.Vocabulary, error) {
	sd, err := d.open()
	if err != nil {
		return "", nil, err
	}
	v, err := vocab.Open(d.trustDir(), sd.ModulesDir(), nil)
	return sd, v, err
}

// paired opens the state folder, the pairing this agent made, and a client signing for its key.
func (d *dirs) paired() (state.Dir, state.Pairing, *client.Client, error) {
	sd, err := d.open()
	if err != nil {
		return "", state.Pairing{}, nil, err
	}
	p, err := sd.Pairing()
	if err != nil {
		return "", state.Pairing{}, nil, err
	}
	c, err := planeClient(sd, p)
	if err != nil {
		return "", state.Pairing{}, nil, err
	}
	return sd, p, c, nil
}

// planeClient is a client of the plane pairing p names, signing with the node key in sd.
func planeClient(sd state.Dir, p state.Pairing) (*client.Client, error) {
	key, err := sd.ExistingKey()
	if err != nil {
		return nil, err
	}
	return client.New(p.Plane, p.CA, key)
}
