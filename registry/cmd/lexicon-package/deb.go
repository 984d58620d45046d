package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/lexicon-fleet/lexicon/sdk/cli"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// assets are the packages' fixed files: units, maintainer scripts, lintian overrides, copyright.
// debian/lexicon-agent/lexicon-agent.service is the agent's own unit, kept identical to
// agent/cmd/lexicon-agent/lexicon-agent.service by TestAgentUnitIsTheReleases.
//
//go:embed debian
var assets embed.FS

const (
	maintainer = "Lexicon maintainers <lexicon@lexicon-fleet.org>"
	homepage   = "https://github.com/lexicon-fleet/lexicon"
)

// archMachine is the ELF machine of each architecture a release pins an agent for; a binary of
// another machine is refused, so a package never carries a binary its Architecture cannot run.
var archMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// debOptions are the inputs of one deb run: one architecture, any of the three binaries.
type debOptions struct {
	version, arch, out string
	date               time.Time
	agent, plane, cli  string
}

// pkgFile is one entry of a package's data: a file from the staging folder or a folder.
type pkgFile struct {
	dst, src string // src is relative to the staging folder; "" for a folder
	mode     fs.FileMode
	typ      string // files.TypeDir, files.TypeConfig or "" for a plain file
}

// debPackage is what makes one package around one binary, installed as /usr/bin/<binary>, or in
// libexec with a link from /usr/bin when the binary replaces itself (its folder must then be writable
// to it, and /usr/bin must not be).
type debPackage struct {
	name, binary, summary, description string
	libexec                            string // the binary's own folder, "" for /usr/bin
	depends, recommends, conflicts     []string
	files                              []pkgFile
	scripts                            bool // debian/<name>/{postinst,prerm,postrm}
}

var debPackages = []debPackage{
	{
		name: "lexicon-agent", binary: "lexicon-agent", libexec: "/usr/lib/lexicon-agent",
		summary: "Lexicon node agent",
		description: "The agent of a node in a Lexicon fleet: it joins a management plane, runs\n" +
			"the signed words its policy accepts, keeps its recipes, and updates itself\n" +
			"from the signed release. Join first (lexicon-agent join --plane URL), then\n" +
			"enable the lexicon-agent service.",
		files: []pkgFile{
			{dst: "/lib/systemd/system/lexicon-agent.service", src: "lexicon-agent/lexicon-agent.service", mode: 0o644},
			{dst: "/lib/systemd/system/lexicon-agent.service.d/package.conf", src: "lexicon-agent/package.conf", mode: 0o644},
			// The agent trusts its config only when no one but root may change it, and keeps its node
			// key and pairing in its state folder: both root's alone.
			{dst: "/etc/lexicon-agent", mode: 0o700, typ: files.TypeDir},
			{dst: "/var/lib/lexicon-agent", mode: 0o700, typ: files.TypeDir},
		},
		scripts: true,
	},
	{
		name: "lexicon-plane", binary: "lexicon-plane",
		summary: "Lexicon management plane",
		description: "The management plane of a Lexicon fleet: the agents' channel, the admin API\n" +
			"and web UI, over SQLite or PostgreSQL, run as the lexicon-plane system\n" +
			"account. Set its options in /etc/default/lexicon-plane, then enable the\n" +
			"lexicon-plane service.",
		depends:    []string{"adduser"},
		recommends: []string{"lexicon-cli"},
		files: []pkgFile{
			{dst: "/lib/systemd/system/lexicon-plane.service", src: "lexicon-plane/lexicon-plane.service", mode: 0o644},
			{dst: "/etc/default/lexicon-plane", src: "lexicon-plane/default", mode: 0o644, typ: files.TypeConfig},
		},
		scripts: true,
	},
	{
		name: "lexicon-cli", binary: "lexicon",
		summary: "Lexicon admin command line",
		description: "The lexicon command: everything the Lexicon management plane's admin API\n" +
			"offers, from any machine that reaches the plane.",
		// Debian's own lexicon package (a DNS record tool) installs a command of the same name.
		conflicts: []string{"lexicon"},
	},
}

// builtPackage is one package a run wrote.
type builtPackage struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Size int64  `json:"size"`
}

type debResult struct {
	Packages []builtPackage `json:"packages"`
}

func (r debResult) Text(w io.Writer) {
	for _, p := range r.Packages {
		fmt.Fprintf(w, "%s (%d bytes)\n", p.Path, p.Size)
	}
}

func debCmd() *cli.Command {
	var o debOptions
	var date string
	return &cli.Command{
		Path: "deb", Args: "--version V --arch amd64|arm64 [--agent FILE] [--plane FILE] [--cli FILE] [--out DIR] [--date UNIX]", MaxArgs: 0,
		Summary: "make lexicon-agent, lexicon-plane and lexicon-cli .deb packages from built binaries",
		Setup: func(fs *flag.FlagSet) {
			fs.StringVar(&o.version, "version", "", "the release version (VERSION): 1.2.3 or 1.2.3-rc.1")
			fs.StringVar(&o.arch, "arch", "", "the binaries' architecture: amd64 or arm64")
			fs.StringVar(&o.out, "out", "build/packages", "folder the packages are written to")
			fs.StringVar(&o.agent, "agent", "", "the lexicon-agent binary; makes the lexicon-agent package")
			fs.StringVar(&o.plane, "plane", "", "the lexicon-plane binary; makes the lexicon-plane package")
			fs.StringVar(&o.cli, "cli", "", "the lexicon binary; makes the lexicon-cli package")
			fs.StringVar(&date, "date", "", "time stamped on every file and the changelog, in Unix seconds (default $SOURCE_DATE_EPOCH, else now)")
		},
		Run: func(ctx context.Context, env *cli.Env, args []string) (any, error) {
			if date == "" {
				date = os.Getenv("SOURCE_DATE_EPOCH")
			}
			o.date = time.Now()
			if date != "" {
				sec, err := strconv.ParseInt(date, 10, 64)
				if err != nil {
					return nil, cli.UsageError("--date %q is not Unix seconds", date)
				}
				o.date = time.Unix(sec, 0)
			}
			built, err := buildDebs(o)
			if err != nil {
				return nil, err
			}
			return debResult{Packages: built}, nil
		},
	}
}

// debVersion is version as Debian orders it: a prerelease sorts before its release, so 1.2.3-rc.1
// becomes 1.2.3~rc.1. The package is native (no Debian revision): its source is Lexicon's.
func debVersion(version string) (string, error) {
	v := strings.Replace(version, "-", "~", 1)
	if !regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`).MatchString(v) {
		return "", cli.UsageError("--version %q is not a version Debian accepts (1.2.3 or 1.2.3-rc.1)", version)
	}
	return v, nil
}

// buildDebs writes one package for each binary o names.
func buildDebs(o debOptions) ([]builtPackage, error) {
	version, err := debVersion(o.version)
	if err != nil {
		return nil, err
	}
	if _, ok := archMachine[o.arch]; !ok {
		return nil, cli.UsageError("--arch %q: packages are made for amd64 and arm64", o.arch)
	}
	bins := map[string]string{"lexicon-agent": o.agent, "lexicon-plane": o.plane, "lexicon-cli": o.cli}
	if o.agent == "" && o.plane == "" && o.cli == "" {
		return nil, cli.UsageError("name at least one binary: --agent, --plane or --cli")
	}
	// Every binary is checked before any package is written, so a refused run leaves nothing behind.
	for _, p := range debPackages {
		if bins[p.name] == "" {
			continue
		}
		if err := checkBinary(bins[p.name], o.arch); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, errcode.Wrap(err, errcode.IOFailed, "cannot create %s", o.out)
	}
	var built []builtPackage
	for _, p := range debPackages {
		if bins[p.name] == "" {
			continue
		}
		b, err := buildDeb(p, bins[p.name], version, o)
		if err != nil {
			return nil, err
		}
		built = append(built, b)
	}
	return built, nil
}

// buildDeb stages p's fixed files and generated docs in a temporary folder, since nfpm reads every
// file from disk, and writes the package beside its final name before renaming it there.
func buildDeb(p debPackage, bin, version string, o debOptions) (builtPackage, error) {
	stage, err := os.MkdirTemp("", "lexicon-package-")
	if err != nil {
		return builtPackage{}, errcode.Wrap(err, errcode.IOFailed, "cannot make a staging folder")
	}
	defer os.RemoveAll(stage)
	if err := stageAssets(stage); err != nil {
		return builtPackage{}, err
	}
	doc := "/usr/share/doc/" + p.name
	changelog, err := changelogGz(p.name, version, o.date)
	if err != nil {
		return builtPackage{}, err
	}
	if err := os.WriteFile(filepath.Join(stage, p.name+".changelog.gz"), changelog, 0o644); err != nil {
		return builtPackage{}, errcode.Wrap(err, errcode.IOFailed, "cannot stage the changelog")
	}
	entries := append([]pkgFile{}, p.files...)
	entries = append(entries,
		pkgFile{dst: doc + "/copyright", src: "copyright", mode: 0o644},
		pkgFile{dst: doc + "/changelog.gz", src: p.name + ".changelog.gz", mode: 0o644},
	)
	if _, err := fs.Stat(assets, "debian/"+p.name+"/lintian-overrides"); err == nil {
		entries = append(entries, pkgFile{dst: "/usr/share/lintian/overrides/" + p.name, src: p.name + "/lintian-overrides", mode: 0o644})
	}
	mtime := o.date.UTC()
	dst := "/usr/bin/" + p.binary
	contents := files.Contents{}
	if p.libexec != "" {
		dst = p.libexec + "/" + p.binary
		// Relative, as Debian policy wants a link within /usr.
		contents = append(contents, &files.Content{Source: "../lib/" + strings.TrimPrefix(dst, "/usr/lib/"), Destination: "/usr/bin/" + p.binary, Type: files.TypeSymlink,
			FileInfo: &files.ContentFileInfo{Mode: 0o777, MTime: mtime}})
	}
	contents = append(contents, &files.Content{Source: bin, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: mtime}})
	for _, e := range entries {
		c := &files.Content{Destination: e.dst, Type: e.typ, FileInfo: &files.ContentFileInfo{Mode: e.mode, MTime: mtime}}
		if e.src != "" {
			c.Source = filepath.Join(stage, e.src)
		}
		contents = append(contents, c)
	}
	info := &nfpm.Info{
		Name: p.name, Arch: o.arch, Platform: "linux",
		Version: version, VersionSchema: "none",
		Section: "admin", Priority: "optional",
		Maintainer: maintainer, Homepage: homepage,
		Description: p.summary + "\n" + p.description,
		MTime:       mtime,
		Overridables: nfpm.Overridables{
			Depends: p.depends, Recommends: p.recommends, Conflicts: p.conflicts,
			Contents: contents,
			Deb:      nfpm.Deb{Compression: "gzip"}, // every dpkg reads it; xz (pure Go) took a minute a package
		},
	}
	if p.scripts {
		info.Scripts = nfpm.Scripts{
			PostInstall: filepath.Join(stage, p.name, "postinst"),
			PreRemove:   filepath.Join(stage, p.name, "prerm"),
			PostRemove:  filepath.Join(stage, p.name, "postrm"),
		}
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return builtPackage{}, errcode.Wrap(err, errcode.UsageInvalid, "package %s", p.name)
	}
	var buf bytes.Buffer
	if err := deb.Default.Package(info, &buf); err != nil {
		return builtPackage{}, errcode.Wrap(err, errcode.IOFailed, "cannot make package %s", p.name)
	}
	out := filepath.Join(o.out, fmt.Sprintf("%s_%s_%s.deb", p.name, version, o.arch))
	if err := os.WriteFile(out+".tmp", buf.Bytes(), 0o644); err != nil {
		return builtPackage{}, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", out)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		os.Remove(out + ".tmp")
		return builtPackage{}, errcode.Wrap(err, errcode.IOFailed, "cannot write %s", out)
	}
	return builtPackage{Name: p.name, Path: out, Size: int64(buf.Len())}, nil
}

// checkBinary refuses a binary that is not an executable of arch's machine.
func checkBinary(bin, arch string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return errcode.Wrap(err, errcode.UsageInvalid, "%s is not a Linux executable", bin)
	}
	defer f.Close()
	if f.Machine != archMachine[arch] || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return errcode.New(errcode.UsageInvalid, "%s is a %s %s, not an executable for %s", bin, f.Machine, f.Type, arch)
	}
	return nil
}

// stageAssets copies the embedded debian folder into stage.
func stageAssets(stage string) error {
	return fs.WalkDir(assets, "debian", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(stage, strings.TrimPrefix(strings.TrimPrefix(name, "debian"), "/"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := assets.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot stage %s", path.Base(name))
		}
		return nil
	})
}

// changelogGz is the package's Debian changelog, one entry for this release, compressed as lintian
// wants it (best compression, no name or time in the gzip header, so the bytes are reproducible).
func changelogGz(name, version string, date time.Time) ([]byte, error) {
	text := fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Lexicon %s; see %s for the changes.\n\n -- %s  %s\n",
		name, version, version, homepage, maintainer, date.UTC().Format(time.RFC1123Z))
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write([]byte(text)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
