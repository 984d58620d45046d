package backup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Keys are age X25519 keys in age's own text forms ("AGE-SECRET-KEY-1...", "age1..."), so that
// Debian's age and age-keygen read and make the same files: a recovery needs no Lexicon code.

// ParseRecipients parses age X25519 recipients (age1...); anything else, including age's other
// recipient types, is refused.
func ParseRecipients(rs []string) ([]age.Recipient, error) {
	if len(rs) == 0 || len(rs) > MaxRecipients {
		return nil, errcode.New(errcode.BackupGrantInvalid, "%d recipients; a run is encrypted to 1 to %d", len(rs), MaxRecipients).
			With(errcode.DetailField, "recipients")
	}
	out := make([]age.Recipient, 0, len(rs))
	for i, r := range rs {
		rec, err := age.ParseX25519Recipient(r)
		if err != nil {
			return nil, errcode.Wrap(err, errcode.BackupGrantInvalid, "recipient %d is not an age X25519 recipient (age1...)", i).
				With(errcode.DetailField, fmt.Sprintf("recipients/%d", i))
		}
		out = append(out, rec)
	}
	return out, nil
}

// KeyFile is an identity file as age-keygen writes it: comments naming when it was made and its
// public key, then the secret key.
func KeyFile(id *age.X25519Identity, now time.Time) string {
	return fmt.Sprintf("# created: %s\n# public key: %s\n%s", now.UTC().Format(time.RFC3339), id.Recipient(), id)
}

// ParseIdentity reads an identity file (KeyFile's form, or age-keygen's): comment and blank lines
// are skipped, and exactly one X25519 secret key must remain.
func ParseIdentity(data []byte) (*age.X25519Identity, error) {
	var found *age.X25519Identity
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if found != nil {
			return nil, errcode.New(errcode.KeyMalformed, "an identity file holds one key")
		}
		id, err := age.ParseX25519Identity(line)
		if err != nil {
			// age's error quotes the line; the line is a secret key, so it goes nowhere.
			return nil, errcode.New(errcode.KeyMalformed, "not an age X25519 secret key (AGE-SECRET-KEY-1...)")
		}
		found = id
	}
	if found == nil {
		return nil, errcode.New(errcode.KeyMalformed, "the identity file holds no key")
	}
	return found, nil
}

// ReadIdentityFile reads an identity from a private key file: refused (key.file_untrusted) if anyone
// but its owner may read it, or if anyone but the running user or root could have written it or its
// folder.
func ReadIdentityFile(path string) (*age.X25519Identity, error) {
	data, err := keys.ReadPrivate(path)
	if err != nil {
		return nil, err
	}
	id, err := ParseIdentity(data)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyMalformed, "%s", path).With(errcode.DetailPath, path)
	}
	return id, nil
}

// NodeKey reads the node's backup key from path, making it (0600) first when create is set and
// there is none. Without create, a missing key is backup.node_key_missing: verify and restore can only
// decrypt with the key the runs were made with.
func NodeKey(path string, create bool, now time.Time) (*age.X25519Identity, error) {
	id, err := ReadIdentityFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if !create {
		return nil, errcode.Wrap(err, errcode.BackupNodeKeyMissing, "this node has no backup key (%s), so it cannot decrypt its runs; restore with the fleet's recovery key", path).
			With(errcode.DetailPath, path)
	}
	id, err = age.GenerateX25519Identity()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.InternalError, "cannot make a backup key")
	}
	if err := keys.WritePrivate(path, KeyFile(id, now)); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	// Another process may have made one first; the file is the key either way.
	return ReadIdentityFile(path)
}
