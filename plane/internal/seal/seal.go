// Package seal keeps driver credentials sealed at rest under the plane's master key: a 32-byte key in a
// file of its own (mode 0600, created on first start), AES-256-GCM, and each sealed credential bound to
// the account it belongs to.
//
//	key, err := seal.LoadOrCreate(filepath.Join(data, "master.key"))
//	box := key.Seal([]byte(credential), seal.AccountContext("prod-dns", "dns-rfc2136"))
//	plain, err := key.Open(box, seal.AccountContext("prod-dns", "dns-rfc2136"))
//
// File format: one line, "lexicon-master-key-v1:" and the key in unpadded base64url. Sealed format:
// version byte 1, a random 12-byte nonce, then the GCM ciphertext and tag. The additional data names the
// account and its driver, so a sealed credential copied onto another account's row does not open.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// KeySize is the master key's length in bytes.
const KeySize = 32

const (
	filePrefix = "lexicon-master-key-v1:"
	version    = 1
	nonceSize  = 12
)

// Key is the plane's master key. Its String never shows the key.
type Key struct {
	aead cipher.AEAD
	id   string
}

// ID names the key without revealing it: 16 hex digits of a hash of the key. Every sealed credential
// records it, so a replica holding another key can say so.
func (k *Key) ID() string { return k.id }

// String returns the key's id, never the key.
func (k *Key) String() string { return "master key " + k.id }

// AccountContext is the additional data that binds a sealed credential to its account and driver.
func AccountContext(account, driver string) []byte {
	return []byte("lexicon credential v1\x00" + account + "\x00" + driver)
}

// BackupTargetContext binds a sealed backup target's secret to the target: the driver name no driver
// can have keeps it apart from every account's.
func BackupTargetContext(target string) []byte { return AccountContext(target, "backup target") }

// Seal encrypts plaintext, bound to context.
func (k *Key) Seal(plaintext, context []byte) []byte {
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+k.aead.Overhead())
	out[0] = version
	_, _ = rand.Read(out[1 : 1+nonceSize]) // crypto/rand.Read never fails
	return k.aead.Seal(out, out[1:1+nonceSize], plaintext, context)
}

// Open decrypts what Seal made with this key and the same context. Anything else (another key, another
// context, altered bytes) is account.seal_broken.
func (k *Key) Open(sealed, context []byte) ([]byte, error) {
	if len(sealed) < 1+nonceSize+k.aead.Overhead() || sealed[0] != version {
		return nil, errcode.New(errcode.AccountSealBroken, "the sealed credential is not in a form this plane wrote")
	}
	plain, err := k.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], context)
	if err != nil {
		return nil, errcode.New(errcode.AccountSealBroken, "the sealed credential does not open under %s: it was altered or belongs to another account", k)
	}
	return plain, nil
}

// New makes a Key from its bytes.
func New(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, errcode.New(errcode.KeyMalformed, "a master key is %d bytes, not %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyMalformed, "bad master key")
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyMalformed, "bad master key")
	}
	sum := sha256.Sum256(append([]byte("lexicon master key id v1\x00"), raw...))
	return &Key{aead: aead, id: hex.EncodeToString(sum[:8])}, nil
}

// LoadOrCreate reads the master key at path, or creates it (mode 0600, in a folder created 0700) when
// there is none. The file must be a regular file (not a symlink) owned by the running user, that group
// and others can neither read nor write, in a folder they cannot write; otherwise key.file_untrusted.
// A second process creating it at the same moment reads the one that won.
func LoadOrCreate(path string) (*Key, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", filepath.Dir(path))
	}
	k, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	raw := make([]byte, KeySize)
	_, _ = rand.Read(raw)
	err = keys.CreateExclusive(path, []byte(filePrefix+base64.RawURLEncoding.EncodeToString(raw)+"\n"), 0o600)
	if err != nil && !errors.Is(err, fs.ErrExist) { // another replica made it first: use theirs
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create master key %s", path)
	}
	return Load(path)
}

// Load reads the master key at path with the checks LoadOrCreate describes. A missing file is an error
// that wraps fs.ErrNotExist.
func Load(path string) (*Key, error) {
	dir := filepath.Dir(path)
	dfi, err := os.Stat(dir)
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", dir)
	}
	if err := keys.CheckTrusted(dir, dfi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errcode.Wrap(err, errcode.IOFailed, "no master key at %s", path) // wraps fs.ErrNotExist
	case errors.Is(err, syscall.ELOOP):
		return nil, errcode.New(errcode.KeyFileUntrusted, "master key %s is a symlink; it is read only directly", path).With(errcode.DetailPath, path)
	case err != nil:
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read master key %s", path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read master key %s", path)
	}
	if !fi.Mode().IsRegular() {
		return nil, errcode.New(errcode.KeyFileUntrusted, "master key %s is not a regular file", path).With(errcode.DetailPath, path)
	}
	if err := keys.CheckTrusted(path, fi); err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return nil, errcode.New(errcode.KeyFileUntrusted, "master key %s is not owned by the user running the plane", path).With(errcode.DetailPath, path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, errcode.New(errcode.KeyFileUntrusted, "master key %s is open to group or others (mode %04o); run chmod 600 on it", path, fi.Mode().Perm()).
			With(errcode.DetailPath, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read master key %s", path)
	}
	text, ok := strings.CutPrefix(strings.TrimSpace(string(data)), filePrefix)
	if !ok {
		return nil, errcode.New(errcode.KeyMalformed, "%s is not a Lexicon master key (it starts with %s)", path, filePrefix).With(errcode.DetailPath, path)
	}
	raw, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil, errcode.New(errcode.KeyMalformed, "master key %s is not base64url", path).With(errcode.DetailPath, path)
	}
	return New(raw)
}

// SealWithID seals under k and returns its id: a Key is a ring of one key.
func (k *Key) SealWithID(plaintext, context []byte) ([]byte, string) {
	return k.Seal(plaintext, context), k.ID()
}

// OpenAs opens a value its row says keyID sealed; another key id is account.key_mismatch.
func (k *Key) OpenAs(sealed, context []byte, keyID string) ([]byte, error) {
	if keyID != k.id {
		return nil, errcode.New(errcode.AccountKeyMismatch,
			"the value was sealed under master key %s, this plane holds %s: every replica needs the same master key file",
			keyID, k.id).With(errcode.DetailKeyID, keyID).With(errcode.DetailPlaneKeyID, k.id)
	}
	return k.Open(sealed, context)
}

// SSORefreshContext binds a sealed single sign-on refresh token to its session (the sha256 of its
// cookie): one copied to another row does not open.
func SSORefreshContext(idHash string) []byte { return []byte("lexicon ui sso refresh " + idHash) }
