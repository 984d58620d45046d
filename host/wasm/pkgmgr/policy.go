package pkgmgr

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// apt-cache policy prints, with no arguments, the package files apt reads:
//
//	Package files:
//	 100 /var/lib/dpkg/status
//	     release a=now
//	 500 http://10.213.0.1:8080 bookworm-security/main amd64 Packages
//	     release o=Lexicon-Fixture,a=bookworm-security,n=bookworm-security,l=Lexicon-Fixture-Security,c=main,b=amd64
//	     origin 10.213.0.1
//	Pinned packages:
//
// and, given package names, each one's version table, whose source lines repeat a package file's line:
//
//	liblexfix1:
//	  Installed: 1.0
//	  Candidate: 1.1
//	  Version table:
//	     1.1 500
//	        500 http://10.213.0.1:8080 bookworm-security/main amd64 Packages
//	 *** 1.0 100
//	        100 /var/lib/dpkg/status
//
// Versions are listed newest first. A source is joined to its package file by the text after the
// priority, which is the same in both places.

// ParseSources reads apt-cache policy's package files: each file's line (without its priority) to the
// archive it is, as its Release file names it. A file without a release line (the dpkg status, a flat
// repository) has an empty Origin but for its site.
func ParseSources(out []byte) map[string]capv1.Origin {
	files := map[string]capv1.Origin{}
	cur := ""
	inFiles := false
	sc := newScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "Package files:":
			inFiles = true
			continue
		case !strings.HasPrefix(line, " "):
			inFiles = false
			continue
		case !inFiles:
			continue
		}
		t := strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(t, "release "); ok && cur != "" {
			o := files[cur]
			for kv := range strings.SplitSeq(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "o":
					o.Origin = v
				case "l":
					o.Label = v
				case "a":
					o.Suite = v
				case "n":
					o.Codename = v
				case "c":
					o.Component = v
				}
			}
			files[cur] = o
			continue
		}
		if rest, ok := strings.CutPrefix(t, "origin "); ok && cur != "" {
			o := files[cur]
			o.Site = rest
			files[cur] = o
			continue
		}
		if prio, file, ok := strings.Cut(t, " "); ok && isInt(prio) {
			cur = strings.TrimSpace(file)
			if _, seen := files[cur]; !seen {
				files[cur] = capv1.Origin{}
			}
		}
	}
	return files
}

// Policy is one package's version table from apt-cache policy.
type Policy struct {
	// Name is the package as apt prints it: name, or name:arch for another architecture's.
	Name      string
	Installed string // "" for "(none)"
	Candidate string // "" for "(none)"
	Versions  []PolicyVersion
}

// PolicyVersion is one version in a table, with the package files offering it.
type PolicyVersion struct {
	Version   string
	Installed bool
	Files     []string
}

// ParsePolicy reads apt-cache policy's version tables. Lines it does not know are skipped.
func ParsePolicy(out []byte) []Policy {
	var all []Policy
	var cur *Policy
	sc := newScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' {
			name, ok := strings.CutSuffix(line, ":")
			if !ok || strings.ContainsAny(name, " \t") || name == "" {
				cur = nil
				continue
			}
			all = append(all, Policy{Name: name})
			cur = &all[len(all)-1]
			continue
		}
		if cur == nil {
			continue
		}
		t := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(t, "Installed: "); ok {
			cur.Installed = none(v)
			continue
		}
		if v, ok := strings.CutPrefix(t, "Candidate: "); ok {
			cur.Candidate = none(v)
			continue
		}
		// A file line is indented by eight ("        500 http://... Packages"), a version line by
		// five, or marked installed (" *** 1.0 100"): "VERSION PRIORITY [(phased N%)]".
		if indent := len(line) - len(strings.TrimLeft(line, " ")); indent >= 8 {
			if len(cur.Versions) == 0 {
				continue
			}
			if prio, file, ok := strings.Cut(t, " "); ok && isInt(prio) {
				v := &cur.Versions[len(cur.Versions)-1]
				v.Files = append(v.Files, strings.TrimSpace(file))
			}
			continue
		}
		installed := false
		if rest, ok := strings.CutPrefix(t, "*** "); ok {
			installed, t = true, rest
		}
		if f := strings.Fields(t); len(f) >= 2 && isInt(f[1]) {
			cur.Versions = append(cur.Versions, PolicyVersion{Version: f[0], Installed: installed})
		}
	}
	return all
}

func none(v string) string {
	if v == "(none)" {
		return ""
	}
	return v
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && s != "" && s[0] != '+'
}

func newScanner(b []byte) *bufio.Scanner {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return sc
}

// IsSecurity reports whether o is a security archive: a suite or codename ending in -security
// (Debian since 11, Ubuntu) or /updates (Debian before 11), or a label ending in -Security
// (Debian-Security). A site's own security archive that says so in one of these ways counts.
func IsSecurity(o capv1.Origin) bool {
	for _, s := range []string{o.Suite, o.Codename} {
		if strings.HasSuffix(s, "-security") || strings.HasSuffix(s, "/updates") {
			return true
		}
	}
	return strings.HasSuffix(o.Label, "-Security")
}
