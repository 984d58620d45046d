package wasm

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"

	"github.com/lexicon-fleet/lexicon/registry/keys"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// The compile cache keeps wazero's compiled code on disk so that a new process loads a word in tens of
// milliseconds instead of compiling it for a second. wazero's own file cache checks only a CRC32 of the
// native code (and not even that of its function table), so anyone able to write the cache could make
// the agent run code no statement pins. Each entry here is therefore sealed with an HMAC-SHA256 under a
// key only the agent holds, bound to the module's pinned sha256, the wazero version and the compile
// variant. An entry that does not verify is deleted and the word is compiled again from its verified
// bytes. wazero is only ever shown a verified copy, in a private directory made for that one compile.

// CacheKeySize is the length of the key that seals compile-cache entries.
const CacheKeySize = 32

const (
	entryMagic   = "LXWC1\n"
	macDomain    = "lexicon/wasm-compile-cache/v1"
	maxEntrySize = 512 << 20
)

// CacheStats counts what the compile cache did since the host started.
type CacheStats struct {
	Hits     int64 `json:"hits"`     // entries verified and used
	Misses   int64 `json:"misses"`   // no entry: compiled and stored
	Rejected int64 `json:"rejected"` // entries that failed verification: deleted, compiled again
	// Interpreted counts loads readied for the interpreter instead (Config.InterpretUncached).
	Interpreted int64 `json:"interpreted"`
}

type cacheCounters struct{ hits, misses, rejected, interpreted atomic.Int64 }

func (c *cacheCounters) stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Rejected: c.rejected.Load(), Interpreted: c.interpreted.Load()}
}

func (c *cacheCounters) add(s CacheStats) {
	c.hits.Add(s.Hits)
	c.misses.Add(s.Misses)
	c.rejected.Add(s.Rejected)
	c.interpreted.Add(s.Interpreted)
}

// compileCache is the sealed on-disk cache. A nil *compileCache caches nothing.
type compileCache struct {
	dir     string // one directory per wazero version and platform
	key     []byte
	version string // wazeroVersion(), which every seal binds
}

// wazeroFork names the patched wazero in third_party/wazero, whose build info says only that a folder
// replaces the release. A change to lexicon.patch that changes compiled code or its serialised form
// changes this name, so no cache entry made by another build is read.
const wazeroFork = "lexicon.2"

// wazeroVersion names the wazero module this binary links, which decides whether compiled code fits.
func wazeroVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/tetratelabs/wazero" {
				if d.Replace != nil {
					return d.Version + "+" + wazeroFork
				}
				return d.Version
			}
		}
	}
	return "unknown"
}

func openCompileCache(dir string, key []byte) (*compileCache, error) {
	if len(key) != CacheKeySize {
		return nil, errcode.New(errcode.KeyMalformed, "compile-cache key must be %d bytes, not %d", CacheKeySize, len(key))
	}
	version := wazeroVersion()
	d := versionDir(dir, version)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create compile cache %s", d)
	}
	removeStale(d)
	return &compileCache{dir: d, key: bytes.Clone(key), version: version}, nil
}

// versionDir is the folder of dir holding the entries this binary's wazero can use.
func versionDir(dir, version string) string {
	return filepath.Join(dir, fmt.Sprintf("wazero-%s-%s-%s", version, runtime.GOOS, runtime.GOARCH))
}

// cachedEntryExists reports whether the cache at dir has an entry for the module in variant; whether
// it verifies is learnt only when it is used.
func cachedEntryExists(dir, digest, variant string) bool {
	_, err := os.Lstat(filepath.Join(versionDir(dir, wazeroVersion()), digest+"-"+variant+".entry"))
	return err == nil
}

// removeStale removes compile directories and temp entries a process that died mid-compile left.
func removeStale(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".compile-") && !strings.HasPrefix(e.Name(), ".entry-") {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// LoadCacheKey reads the compile-cache key at path, creating it (0600) if it does not exist. A key file
// that is not a regular file of the running user's, or that group or others can read or write, is
// refused (key.file_untrusted): whoever can read the key can forge cache entries.
func LoadCacheKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return createCacheKey(path)
	}
	if err != nil {
		return nil, errcode.Wrap(err, errcode.KeyFileUntrusted, "cannot open compile-cache key %s", path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot stat compile-cache key %s", path)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, errcode.New(errcode.KeyFileUntrusted, "compile-cache key %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, errcode.New(errcode.KeyFileUntrusted, "compile-cache key %s is open to group or others (%v)", path, fi.Mode().Perm())
	case st == nil || int(st.Uid) != os.Geteuid():
		return nil, errcode.New(errcode.KeyFileUntrusted, "compile-cache key %s is not owned by the running user", path)
	}
	key, err := io.ReadAll(io.LimitReader(f, CacheKeySize+1))
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot read compile-cache key %s", path)
	}
	if len(key) != CacheKeySize {
		return nil, errcode.New(errcode.KeyMalformed, "compile-cache key %s must hold %d bytes", path, CacheKeySize)
	}
	return key, nil
}

func createCacheKey(path string) ([]byte, error) {
	key := make([]byte, CacheKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot make a compile-cache key")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", filepath.Dir(path))
	}
	// Created whole or not at all, so a process racing to load it never reads half a key.
	err := keys.CreateExclusive(path, key, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadCacheKey(path) // another process made it first
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}

// cacheSession is one compile through the cache: a private directory that holds either a verified copy
// of the entry or nothing, and the wazero cache pointed at it.
type cacheSession struct {
	c       *compileCache
	entry   string // path of the sealed entry
	digest  string
	variant string
	tmp     string
	wz      wazero.CompilationCache
	hadCopy string // wazero's file name of the verified copy, "" on a miss
	memfd   int    // the sealed memfd holding it, or 0
	stats   CacheStats
}

// begin prepares the compile of the module with digest (its pinned sha256) in variant.
func (c *compileCache) begin(digest, variant string) (*cacheSession, error) {
	s := &cacheSession{c: c, digest: digest, variant: variant,
		entry: filepath.Join(c.dir, digest+"-"+variant+".entry")}
	tmp, err := os.MkdirTemp(c.dir, ".compile-")
	if err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot use compile cache %s", c.dir)
	}
	s.tmp = tmp
	wz, err := wazero.NewCompilationCacheWithDir(filepath.Join(tmp, "wz"))
	if err != nil {
		s.close()
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot open compile cache")
	}
	s.wz = wz
	name, fd, verr := c.stageEntry(s.entry, digest, variant)
	switch {
	case verr == nil:
		// wazero keeps its files one level down, in a directory it names for its version and platform
		// and has just made; it reads an entry only when asked for it, so staging it now is in time. The
		// name it opens is a link to the sealed memfd holding the verified bytes: nothing on disk is read
		// after the check, and nothing can change the memfd any more.
		s.memfd = fd
		sub := s.subdir()
		if sub == "" {
			err = errors.New("wazero made no cache directory")
		} else {
			err = os.Symlink(fmt.Sprintf("/proc/self/fd/%d", fd), filepath.Join(sub, name))
		}
		if err != nil {
			s.close()
			_ = s.wz.Close(context.Background())
			return nil, errcode.Wrap(err, errcode.IOFailed, "cannot stage compile-cache entry")
		}
		s.hadCopy = name
	case errors.Is(verr, fs.ErrNotExist):
	default:
		os.Remove(s.entry)
		s.stats.Rejected++
	}
	return s, nil
}

// has reports whether an entry for the module exists; whether it verifies is learnt only when it is
// used. A nil cache has nothing.
func (c *compileCache) has(digest, variant string) bool {
	if c == nil {
		return false
	}
	return cachedEntryExists(filepath.Dir(c.dir), digest, variant)
}

// forget deletes the entry, for when wazero could not use a verified one (a different CPU, say).
func (s *cacheSession) forget() { os.Remove(s.entry) }

// finish stores what wazero compiled when the entry was missing or rejected. It is called only after a
// successful compile.
func (s *cacheSession) finish() {
	if s.hadCopy != "" {
		// wazero deletes an entry it finds stale or broken and compiles anew; only count a real hit.
		if fi, err := os.Lstat(filepath.Join(s.subdir(), s.hadCopy)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			s.stats.Hits++
			return
		}
	}
	s.stats.Misses++
	sub := s.subdir()
	if sub == "" {
		return
	}
	entries, err := os.ReadDir(sub)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || len(e.Name()) != 64 {
			continue
		}
		content, err := os.ReadFile(filepath.Join(sub, e.Name()))
		if err != nil {
			return
		}
		_ = s.c.writeEntry(s.entry, s.digest, s.variant, e.Name(), content)
		return
	}
}

func (s *cacheSession) subdir() string {
	entries, err := os.ReadDir(filepath.Join(s.tmp, "wz"))
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.IsDir() {
			return filepath.Join(s.tmp, "wz", e.Name())
		}
	}
	return ""
}

// close removes the private directory. The compiled module lives on in memory, in the engine of s.wz,
// which the caller closes with its runtime.
func (s *cacheSession) close() {
	if s.memfd > 0 {
		unix.Close(s.memfd)
		s.memfd = 0
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

// macOf starts the seal of one entry: everything wazero will read, bound to what it was compiled from.
// The content, of size bytes, is written to the returned hash.
func (c *compileCache) macOf(digest, variant, name string, size int64) hash.Hash {
	h := hmac.New(sha256.New, c.key)
	part := func(n int) {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(n))
		h.Write(b[:])
	}
	for _, p := range []string{macDomain, c.version, digest, variant, name} {
		part(len(p))
		h.Write([]byte(p))
	}
	part(int(size))
	return h
}

func (c *compileCache) mac(digest, variant, name string, content []byte) []byte {
	h := c.macOf(digest, variant, name, int64(len(content)))
	h.Write(content)
	return h.Sum(nil)
}

// Entry file: magic, hex MAC, newline, wazero's file name, newline, content.
func (c *compileCache) writeEntry(path, digest, variant, name string, content []byte) error {
	var b bytes.Buffer
	b.WriteString(entryMagic)
	b.WriteString(hex.EncodeToString(c.mac(digest, variant, name, content)))
	b.WriteByte('\n')
	b.WriteString(name)
	b.WriteByte('\n')
	b.Write(content)
	tmp, err := os.CreateTemp(c.dir, ".entry-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err = tmp.Write(b.Bytes()); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// errEntryInvalid marks an entry that exists but does not verify.
var errEntryInvalid = errors.New("compile-cache entry does not verify")

const headLen = len(entryMagic) + 64 + 1 + 64 + 1

// stageEntry copies a verified entry's content into a sealed memfd and returns wazero's file name and
// the memfd; fs.ErrNotExist when there is no entry, errEntryInvalid when it does not verify. The entry
// is read once, in chunks, hashed and copied as it is read.
func (c *compileCache) stageEntry(path, digest, variant string) (string, int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", 0, fs.ErrNotExist
		}
		return "", 0, errEntryInvalid
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(headLen) || fi.Size() > maxEntrySize {
		return "", 0, errEntryInvalid
	}
	head := make([]byte, headLen)
	if _, err := io.ReadFull(f, head); err != nil || string(head[:len(entryMagic)]) != entryMagic {
		return "", 0, errEntryInvalid
	}
	p := head[len(entryMagic):]
	want, err := hex.DecodeString(string(p[:64]))
	if err != nil || p[64] != '\n' || p[129] != '\n' {
		return "", 0, errEntryInvalid
	}
	name := string(p[65:129])
	if _, err := hex.DecodeString(name); err != nil {
		return "", 0, errEntryInvalid
	}
	size := fi.Size() - int64(headLen)
	fd, err := unix.MemfdCreate("lexicon-compile-cache", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return "", 0, errEntryInvalid
	}
	h := c.macOf(digest, variant, name, size)
	mem := os.NewFile(uintptr(fd), "memfd")
	n, err := io.CopyBuffer(io.MultiWriter(h, mem), io.LimitReader(f, size+1), make([]byte, 1<<20))
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if err == nil && n == size && hmac.Equal(want, h.Sum(nil)) {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err == nil {
			// Hand the descriptor over; the *os.File must not close it when collected.
			dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
			mem.Close()
			if err != nil {
				return "", 0, errEntryInvalid
			}
			return name, dup, nil
		}
	}
	mem.Close()
	return "", 0, errEntryInvalid
}
