package apttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildRepo compiles the fixture's library and daemon (gcc), packs every package (dpkg-deb), indexes
// each suite (apt-ftparchive) and signs its Release file with a key made for this build (gpg).
// It answers an error, not a test failure, so a program (BuildRepo) can build it too.
func buildRepo(dir, arch, multiarch string) error {
	src := filepath.Join(dir, ".src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(src)
	lib, daemon := filepath.Join(src, "lib.c"), filepath.Join(src, "daemon.c")
	if err := os.WriteFile(lib, []byte(libSource), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(daemon, []byte(daemonSource), 0o644); err != nil {
		return err
	}
	for _, v := range []struct{ out, def string }{{"liblexfix.so.1.0", "10"}, {"liblexfix.so.1.1", "11"}} {
		if err := runCmd(exec.Command("gcc", "-O2", "-shared", "-fPIC", "-DVERSION="+v.def, "-Wl,-soname,liblexfix.so.1", "-o", filepath.Join(src, v.out), lib)); err != nil {
			return err
		}
	}
	// The daemon links the library by its soname, as a packaged program does.
	if err := os.Symlink("liblexfix.so.1.0", filepath.Join(src, "liblexfix.so")); err != nil {
		return err
	}
	if err := runCmd(exec.Command("gcc", "-O2", "-o", filepath.Join(src, "lexfix-daemon"), daemon, "-L"+src, "-llexfix")); err != nil {
		return err
	}

	for _, p := range packages(multiarch) {
		stage := filepath.Join(src, "stage-"+p.name+"-"+p.version)
		control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: Lexicon tests <tests@lexicon.invalid>\nSection: misc\nPriority: optional\nDescription: Lexicon test fixture %s\n", p.name, p.version, arch, p.name)
		if p.depends != "" {
			control += "Depends: " + p.depends + "\n"
		}
		files := map[string]string{"DEBIAN/control": control}
		modes := map[string]os.FileMode{"DEBIAN/control": 0o644}
		for name, s := range p.scripts {
			files["DEBIAN/"+name], modes["DEBIAN/"+name] = s, 0o755
		}
		if p.triggers != "" {
			files["DEBIAN/triggers"], modes["DEBIAN/triggers"] = p.triggers, 0o644
		}
		for path, f := range p.files {
			rel := strings.TrimPrefix(path, "/")
			if f.build != "" {
				data, err := os.ReadFile(filepath.Join(src, f.build))
				if err != nil {
					return err
				}
				files[rel] = string(data)
			} else {
				files[rel] = f.content
			}
			modes[rel] = os.FileMode(f.mode)
		}
		for rel, data := range files {
			p := filepath.Join(stage, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(data), modes[rel]); err != nil {
				return err
			}
			if err := os.Chmod(p, modes[rel]); err != nil {
				return err
			}
		}
		pool := filepath.Join(dir, "pool", p.suite)
		if err := os.MkdirAll(pool, 0o755); err != nil {
			return err
		}
		if err := runCmd(exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", stage, filepath.Join(pool, fmt.Sprintf("%s_%s_%s.deb", p.name, p.version, arch)))); err != nil {
			return err
		}
	}

	gnupg := filepath.Join(src, "gnupg")
	if err := os.Mkdir(gnupg, 0o700); err != nil {
		return err
	}
	gpg := func(args ...string) *exec.Cmd {
		cmd := exec.Command("gpg", append([]string{"--batch", "--quiet", "--homedir", gnupg, "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		cmd.Dir = dir
		return cmd
	}
	// The agent gpg starts for this home is stopped with it.
	defer func() { _ = exec.Command("gpgconf", "--homedir", gnupg, "--kill", "all").Run() }()
	if err := runCmd(gpg("--quick-generate-key", "Lexicon apt fixture <fixture@lexicon.invalid>", "ed25519", "sign", "never")); err != nil {
		return err
	}
	if err := runCmd(gpg("--output", filepath.Join(dir, KeyringName), "--export")); err != nil {
		return err
	}

	for _, s := range suites {
		bin := filepath.Join(dir, "dists", s.name, "main", "binary-"+arch)
		if err := os.MkdirAll(bin, 0o755); err != nil {
			return err
		}
		pk := exec.Command("apt-ftparchive", "packages", filepath.Join("pool", s.name))
		pk.Dir = dir
		packagesFile := filepath.Join(bin, "Packages")
		index, err := outputOf(pk)
		if err != nil {
			return err
		}
		if err := os.WriteFile(packagesFile, []byte(index+"\n"), 0o644); err != nil {
			return err
		}
		if err := runCmd(exec.Command("gzip", "-k", "-n", "-9", packagesFile)); err != nil {
			return err
		}
		rel := exec.Command("apt-ftparchive",
			"-o", "APT::FTPArchive::Release::Origin=Debian",
			"-o", "APT::FTPArchive::Release::Label="+s.label,
			"-o", "APT::FTPArchive::Release::Suite="+s.name,
			"-o", "APT::FTPArchive::Release::Codename="+s.name,
			"-o", "APT::FTPArchive::Release::Architectures="+arch,
			"-o", "APT::FTPArchive::Release::Components=main",
			"-o", "APT::FTPArchive::Release::Description=Lexicon test fixture ("+s.name+")",
			"release", ".")
		rel.Dir = filepath.Join(dir, "dists", s.name)
		release, err := outputOf(rel)
		if err != nil {
			return err
		}
		release += "\n"
		releaseFile := filepath.Join(dir, "dists", s.name, "Release")
		if err := os.WriteFile(releaseFile, []byte(release), 0o644); err != nil {
			return err
		}
		if err := runCmd(gpg("--local-user", "fixture@lexicon.invalid", "--output", filepath.Join(dir, "dists", s.name, "InRelease"), "--clearsign", releaseFile)); err != nil {
			return err
		}
		if err := runCmd(gpg("--local-user", "fixture@lexicon.invalid", "--output", filepath.Join(dir, "dists", s.name, "Release.gpg"), "--armor", "--detach-sign", releaseFile)); err != nil {
			return err
		}
	}
	// Everyone reads it: apt fetches as its own unprivileged user.
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !strings.HasPrefix(p, src) {
			mode := os.FileMode(0o644)
			if d.IsDir() {
				mode = 0o755
			}
			_ = os.Chmod(p, mode)
		}
		return nil
	})
	return nil
}

// buildLayer installs the fixture's 1.0 packages into an overlay on the Debian root from the
// repository (a file: source), holds lexfix-held, and keeps the overlay's upper folder as a layer
// each test's root stacks on.
func buildLayer(t testing.TB, dir, debian, repo string) {
	t.Helper()
	upper, work, merged := filepath.Join(dir, "upper"), filepath.Join(dir, "work"), filepath.Join(dir, "root")
	for _, d := range []string{upper, work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	unmount := mountRoot(t, debian, upper, work, merged, repo)
	r := &Root{Dir: merged, repo: repo}
	func() {
		defer unmount()
		r.WriteFile(t, "/etc/apt/sources.list.d/lexfix.list", []byte(SourcesList("file:"+RepoMount, RepoMount+"/"+KeyringName)))
		// A chroot has no terminal for dpkg's output: apt's own runs in tests say so once, not per run.
		r.WriteFile(t, "/etc/apt/apt.conf.d/90lexfix-no-pty", []byte("Dpkg::Use-Pty \"0\";\n"))
		r.Run(t, "/usr/bin/apt-get", "update", "-q")
		install := []string{"/usr/bin/apt-get", "install", "-y", "-q", "--no-install-recommends"}
		for _, p := range []string{Lib, Daemon, Held, Tool} {
			install = append(install, p+"=1.0")
		}
		r.Run(t, install...)
		r.Run(t, "/usr/bin/apt-mark", "hold", Held)
	}()
	removeAll(t, work)
	removeAll(t, merged)
	// The mount point made for the repository stays, empty, in the layer: every root mounts it there.
	if entries, _ := os.ReadDir(filepath.Join(upper, RepoMount)); len(entries) != 0 {
		t.Fatalf("apttest: the layer holds files under %s", RepoMount)
	}
}
