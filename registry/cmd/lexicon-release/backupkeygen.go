package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

type backupKeygenResult struct {
	Name      string `json:"name"`
	KeyFile   string `json:"key_file"`
	PubFile   string `json:"pub_file"`
	Recipient string `json:"recipient"`
}

func (r backupKeygenResult) Text(w io.Writer) {
	fmt.Fprintf(w, "wrote %s (private, mode 0600) and %s\nrecipient: %s\n", r.KeyFile, r.PubFile, r.Recipient)
	fmt.Fprintln(w, "Give the plane the recipient only. Keep the key file offline, apart from the bucket's credentials:")
	fmt.Fprintln(w, "with both, anyone can read every backup of the fleet (docs/backup-restore-by-hand.md).")
}

// backupKeygenCmd makes the fleet's recovery key on the machine it runs on, never on a plane or a
// node: every backup is encrypted to its public half, and its private half alone (with the bucket)
// restores any of them.
func backupKeygenCmd() *cli.Command {
	var out, name string
	return &cli.Command{
		Path: "backup-keygen", Args: "--out DIR [--name NAME]", MaxArgs: 0,
		Summary: "make the fleet's backup recovery key, offline: NAME.key (age identity, mode 0600) and NAME.pub (its age1 recipient)",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&out, "out", "", "folder to write the key files into (required)")
			fs.StringVar(&name, "name", "recovery", "file name of the key, without extension")
		},
		Run: func(ctx context.Context, env *cli.Env, _ []string) (any, error) {
			if out == "" {
				return nil, cli.UsageError("backup-keygen needs --out DIR")
			}
			if name == "" || filepath.Base(name) != name {
				return nil, cli.UsageError("--name must be a plain file name")
			}
			if err := os.MkdirAll(out, 0o700); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", out)
			}
			id, err := age.GenerateX25519Identity()
			if err != nil {
				return nil, errcode.Wrap(err, errcode.InternalError, "cannot make a key")
			}
			r := backupKeygenResult{Name: name, KeyFile: filepath.Join(out, name+".key"), PubFile: filepath.Join(out, name+".pub"),
				Recipient: id.Recipient().String()}
			if err := keys.WritePrivate(r.KeyFile, ageKeyFile(id, time.Now())); err != nil {
				return nil, err
			}
			if err := keys.WritePublic(r.PubFile, r.Recipient); err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}

// ageKeyFile is the identity file as age-keygen writes it (comments naming when it was made and its
// public key, then the secret key), so Debian's age reads it. It is age's format, not Lexicon's: the
// registry imports no backup (ARCHITECTURE.md, "What each part may import"), and the node reads the
// same form with backup.ParseIdentity.
func ageKeyFile(id *age.X25519Identity, now time.Time) string {
	return fmt.Sprintf("# created: %s\n# public key: %s\n%s\n", now.UTC().Format(time.RFC3339), id.Recipient(), id)
}

var _ cli.Texter = backupKeygenResult{}
