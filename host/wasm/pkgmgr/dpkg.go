package pkgmgr

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/word/capv1"
)

// Record is one package as dpkg's database holds it.
type Record struct {
	Name    string
	Arch    string
	Version string
	// Want is the selection (install, hold, deinstall, purge); State the package's state (installed,
	// config-files, half-installed, unpacked, half-configured, triggers-awaited, triggers-pending,
	// not-installed).
	Want  string
	State string
}

// key names a package instance: multi-arch packages have one per architecture.
func (r Record) key() string { return r.Name + ":" + r.Arch }

// Present reports whether the package's files are on the machine, fully or part way.
func (r Record) Present() bool {
	return r.State != "" && r.State != "not-installed" && r.State != "config-files"
}

// HalfDone reports whether a run left the package part way.
func (r Record) HalfDone() bool {
	switch r.State {
	case "half-installed", "unpacked", "half-configured", "triggers-awaited", "triggers-pending":
		return true
	}
	return false
}

func (r Record) pkg() capv1.Package {
	return capv1.Package{Name: r.Name, Arch: r.Arch, Version: r.Version, Status: r.State}
}

// maxStatusBytes bounds one database file read (a server's status file is a few MiB).
const maxStatusBytes = 64 << 20

// ParseStatus reads dpkg's status format: paragraphs of "Field: value" lines, continuation lines
// starting with a space or a tab, separated by blank lines. Only Package, Architecture, Version and
// Status are kept; a paragraph without a package name is skipped. Status is "want flag state".
func ParseStatus(data []byte) []Record {
	var out []Record
	var cur Record
	flush := func() {
		if cur.Name != "" {
			out = append(out, cur)
		}
		cur = Record{}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation (Description, Conffiles)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			cur.Name = v
		case "Architecture":
			cur.Arch = v
		case "Version":
			cur.Version = v
		case "Status":
			if f := strings.Fields(v); len(f) == 3 {
				cur.Want, cur.State = f[0], f[2]
			}
		}
	}
	flush()
	return out
}

// readDatabase reads dpkg's database beneath root as dpkg itself does: the status file, then the
// journal entries in updates/ in numeric order, each overriding the packages it names (dpkg writes a
// change there first and folds the journal into status later).
func readDatabase(root string) (map[string]Record, error) {
	dir := filepath.Join(root, "var/lib/dpkg")
	db := map[string]Record{}
	data, err := readCapped(filepath.Join(dir, "status"))
	if err != nil {
		return nil, err
	}
	for _, r := range ParseStatus(data) {
		db[r.key()] = r
	}
	// Journal entries are named by a number, zero-padded ("0000", "0001").
	type entry struct {
		n    int
		name string
	}
	var journal []entry
	entries, _ := os.ReadDir(filepath.Join(dir, "updates"))
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= 0 && e.Type().IsRegular() {
			journal = append(journal, entry{n, e.Name()})
		}
	}
	slices.SortFunc(journal, func(a, b entry) int { return a.n - b.n })
	for _, j := range journal {
		data, err := readCapped(filepath.Join(dir, "updates", j.name))
		if err != nil {
			continue // folded into status since the listing
		}
		for _, r := range ParseStatus(data) {
			db[r.key()] = r
		}
	}
	return db, nil
}

func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(&limitReader{f: f, n: maxStatusBytes})
	return b.Bytes(), err
}

type limitReader struct {
	f *os.File
	n int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.f.Read(p)
	l.n -= int64(n)
	return n, err
}

// sorted returns the records in name, then architecture, order.
func sorted(db map[string]Record, keep func(Record) bool) []Record {
	var out []Record
	for _, r := range db {
		if keep(r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.key(), b.key()) })
	return out
}
