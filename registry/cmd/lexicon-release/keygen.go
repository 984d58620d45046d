package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type keygenResult struct {
	Name        string `json:"name"`
	KeyFile     string `json:"key_file"`
	PubFile     string `json:"pub_file"`
	PEMFile     string `json:"pem_file"`
	PublicKey   string `json:"public_key"`
	Fingerprint string `json:"fingerprint"`
}

func (r keygenResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote %s (private, mode 0600), %s and %s (PEM, for standard Sigstore tools)\n%s\n", r.KeyFile, r.PubFile, r.PEMFile, r.Fingerprint)
}

func keygenCmd() *cli.Command {
	var out, name string
	return &cli.Command{
		Path: "keygen", Args: "--out DIR [--name NAME]", MaxArgs: 0,
		Summary: "make a publisher key (ECDSA P-256): NAME.key (mode 0600), NAME.pub and NAME.pem",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "folder to write the key files into (required)")
			fs.StringVar(&name, "name", "publisher", "file name of the key, without extension")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if out == "" {
				return nil, cli.UsageError("keygen needs --out DIR")
			}
			if name == "" || filepath.Base(name) != name {
				return nil, cli.UsageError("--name must be a plain file name")
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", out)
			}
			k := keys.NewPublisher()
			r := keygenResult{
				Name: name, KeyFile: filepath.Join(out, name+".key"), PubFile: filepath.Join(out, name+".pub"), PEMFile: filepath.Join(out, name+".pem"),
				PublicKey: k.Public().String(), Fingerprint: k.Public().Fingerprint(),
			}
			if err := keys.WritePrivate(r.KeyFile, k.String()); err != nil {
				return nil, err
			}
			if err := keys.WritePublic(r.PubFile, r.PublicKey); err != nil {
				return nil, err
			}
			if err := keys.CreateExclusive(r.PEMFile, k.Public().PEM(), 0o644); err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}

// readPublic reads a publisher public key file (one line).
func readPublic(path string) (keys.PublisherPublic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return keys.PublisherPublic{}, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", path)
	}
	lines := keys.Lines(data)
	if len(lines) != 1 {
		return keys.PublisherPublic{}, errcode.New(errcode.KeyMalformed, "%s must hold exactly one publisher key", path)
	}
	return keys.ParsePublisherPublic(lines[0])
}
