package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/lexicon-fleet/lexicon/plane/internal/seal"
	"github.com/lexicon-fleet/lexicon/plane/store/open"
	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// A plane backup is a gzipped tar of three files: manifest.json, the master key as its file holds it,
// and the store's snapshot (a SQLite database, or a pg_dump custom-format dump). It holds the key that
// opens every sealed credential: it is written mode 0600 and is as secret as the key.
const (
	backupFormat   = "lexicon-plane-backup/1"
	backupManifest = "manifest.json"
	backupKey      = "master.key"
	backupStore    = "store"
	maxBackupEntry = 64 << 30
)

type backupManifestFile struct {
	Format      string    `json:"format"`
	Store       open.Kind `json:"store"`
	MasterKeyID string    `json:"master_key_id"`
	CreatedAt   time.Time `json:"created_at"`
}

type backupResult struct {
	File        string    `json:"file"`
	Store       open.Kind `json:"store"`
	MasterKeyID string    `json:"master_key_id"`
	Bytes       int64     `json:"bytes"`
}

func (r backupResult) Text(w io.Writer) {
	fmt.Fprintf(w, "%s: %s store and master key %s, %d bytes; keep it as secret as the key\n", r.File, r.Store, r.MasterKeyID, r.Bytes)
}

// url is the store the flags name: --db, else SQLite in the data folder.
func (f *storeFlags) url() string {
	if f.db != "" {
		return f.db
	}
	return filepath.Join(f.data, "plane.db")
}

// keyPath is the master key file: --master-key, else master.key in the data folder.
func keyPath(data, keyFile string) string {
	if keyFile == "" {
		return filepath.Join(data, "master.key")
	}
	return keyFile
}

func backupCmd() *cli.Command {
	var sf storeFlags
	var out, keyFile string
	return &cli.Command{
		Path: "backup", Args: "--out FILE [--data DIR | --db URL]", MaxArgs: 0,
		Summary: "write a consistent snapshot of the store and the master key to FILE, while the plane serves",
		Setup: func(fs *flag.FlagSet) {
			sf.setup(fs)
			fs.StringVar(&out, "out", "", "the backup file to write (must not exist; made mode 600)")
			fs.StringVar(&keyFile, "master-key", "", "the master key file (default DATA/master.key)")
		},
		Run: func(ctx context.Context, _ *cli.Env, _ []string) (any, error) {
			if out == "" {
				return nil, cli.UsageError("backup needs --out FILE")
			}
			key, err := seal.Load(keyPath(sf.data, keyFile))
			if err != nil {
				return nil, err
			}
			keyText, err := os.ReadFile(keyPath(sf.data, keyFile))
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read the master key")
			}
			tmp, err := os.MkdirTemp("", "lexicon-plane-backup-")
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot make a temporary folder")
			}
			defer os.RemoveAll(tmp)
			snap := filepath.Join(tmp, backupStore)
			kind, err := open.Snapshot(ctx, sf.url(), snap)
			if err != nil {
				return nil, err
			}
			man, _ := json.Marshal(backupManifestFile{Format: backupFormat, Store: kind, MasterKeyID: key.ID(), CreatedAt: time.Now().UTC()})
			n, err := writeBackup(out, man, keyText, snap)
			if err != nil {
				return nil, err
			}
			return backupResult{File: out, Store: kind, MasterKeyID: key.ID(), Bytes: n}, nil
		},
	}
}

// writeBackup writes the archive to a new file, removed again if anything fails.
func writeBackup(out string, manifest, key []byte, snapshot string) (int64, error) {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, errcode.Wrap(err, errcode.IOFailed, "cannot create %s (it must not exist)", out)
	}
	fail := func(err error) (int64, error) {
		_ = f.Close()
		_ = os.Remove(out)
		return 0, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", out)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	add := func(name string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	if err := add(backupManifest, int64(len(manifest)), bytes.NewReader(manifest)); err != nil {
		return fail(err)
	}
	if err := add(backupKey, int64(len(key)), bytes.NewReader(key)); err != nil {
		return fail(err)
	}
	s, err := os.Open(snapshot)
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	fi, err := s.Stat()
	if err != nil {
		return fail(err)
	}
	if err := add(backupStore, fi.Size(), s); err != nil {
		return fail(err)
	}
	if err := tw.Close(); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	end, _ := f.Seek(0, io.SeekCurrent)
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return end, nil
}

type restoreResult struct {
	Store       open.Kind `json:"store"`
	MasterKeyID string    `json:"master_key_id"`
	MasterKey   string    `json:"master_key"`
	BackedUpAt  time.Time `json:"backed_up_at"`
}

func (r restoreResult) Text(w io.Writer) {
	fmt.Fprintf(w, "restored the %s store backed up at %s, and master key %s to %s\n", r.Store, r.BackedUpAt.Format(time.RFC3339), r.MasterKeyID, r.MasterKey)
}

func restoreCmd() *cli.Command {
	var sf storeFlags
	var in, keyFile string
	return &cli.Command{
		Path: "restore", Args: "--in FILE [--data DIR | --db URL]", MaxArgs: 0,
		Summary: "restore a backup onto an empty machine: the store (which must be empty) and the master key",
		Setup: func(fs *flag.FlagSet) {
			sf.setup(fs)
			fs.StringVar(&in, "in", "", "the backup file lexicon-plane backup wrote")
			fs.StringVar(&keyFile, "master-key", "", "where to put the master key (default DATA/master.key; an existing one must be the backup's)")
		},
		Run: func(ctx context.Context, _ *cli.Env, _ []string) (any, error) {
			if in == "" {
				return nil, cli.UsageError("restore needs --in FILE")
			}
			tmp, err := os.MkdirTemp("", "lexicon-plane-restore-")
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot make a temporary folder")
			}
			defer os.RemoveAll(tmp)
			man, err := readBackup(in, tmp)
			if err != nil {
				return nil, err
			}
			keyText, err := os.ReadFile(filepath.Join(tmp, backupKey))
			if err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "the backup holds no master key")
			}
			if err := os.MkdirAll(sf.data, 0o700); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create data folder %s", sf.data)
			}
			kp := keyPath(sf.data, keyFile)
			if old, err := os.ReadFile(kp); err == nil {
				if !bytes.Equal(old, keyText) {
					return nil, errcode.New(errcode.UsageInvalid, "%s holds another master key: the backup's credentials would not open; move it away first", kp)
				}
			} else if err := keys.CreateExclusive(kp, keyText, 0o600); err != nil {
				return nil, errcode.Wrap(err, errcode.IOFailed, "cannot write the master key %s", kp)
			}
			key, err := seal.Load(kp)
			if err != nil {
				return nil, err
			}
			if key.ID() != man.MasterKeyID {
				return nil, errcode.New(errcode.UsageInvalid, "the backup's master key is %s, its manifest says %s", key.ID(), man.MasterKeyID)
			}
			if err := open.Restore(ctx, man.Store, filepath.Join(tmp, backupStore), sf.url()); err != nil {
				return nil, err
			}
			return restoreResult{Store: man.Store, MasterKeyID: key.ID(), MasterKey: kp, BackedUpAt: man.CreatedAt}, nil
		},
	}
}

// readBackup unpacks the archive's three files into dir, refusing anything else in it.
func readBackup(in, dir string) (backupManifestFile, error) {
	var man backupManifestFile
	f, err := os.Open(in)
	if err != nil {
		return man, errcode.Wrap(err, errcode.IOFailed, "cannot read %s", in)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return man, errcode.Wrap(err, errcode.UsageInvalid, "%s is not a plane backup", in)
	}
	tr := tar.NewReader(zr)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return man, errcode.Wrap(err, errcode.UsageInvalid, "%s is not a plane backup", in)
		}
		switch h.Name {
		case backupManifest, backupKey, backupStore:
		default:
			return man, errcode.New(errcode.UsageInvalid, "%s holds %q, which no plane backup holds", in, h.Name)
		}
		if seen[h.Name] || h.Typeflag != tar.TypeReg || h.Size > maxBackupEntry {
			return man, errcode.New(errcode.UsageInvalid, "%s is not a plane backup (entry %q)", in, h.Name)
		}
		seen[h.Name] = true
		out, err := os.OpenFile(filepath.Join(dir, h.Name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return man, errcode.Wrap(err, errcode.IOFailed, "cannot unpack %s", h.Name)
		}
		_, err = io.Copy(out, io.LimitReader(tr, h.Size))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return man, errcode.Wrap(err, errcode.IOFailed, "cannot unpack %s", h.Name)
		}
	}
	if len(seen) != 3 {
		return man, errcode.New(errcode.UsageInvalid, "%s lacks a manifest, a master key or a store", in)
	}
	data, err := os.ReadFile(filepath.Join(dir, backupManifest))
	if err != nil || json.Unmarshal(data, &man) != nil || man.Format != backupFormat ||
		(man.Store != open.KindSQLite && man.Store != open.KindPostgres) {
		return man, errcode.New(errcode.UsageInvalid, "%s has no manifest of format %s", in, backupFormat)
	}
	return man, nil
}
