package backup

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Policy is the node owner's say over backups, the "backup" section of the agent's policy.json: what
// may leave the machine and where a restore may write. The plane's backup policy chooses among these;
// it can never widen them.
//
//	"backup": {
//	  "paths": ["/srv/app", "/etc/app"],
//	  "restore_paths": ["/srv/restore"],
//	  "databases": ["app"],
//	  "postgres": {"bin": "/usr/bin", "host": "127.0.0.1", "port": 5432, "user": "postgres"}
//	}
type Policy struct {
	// Paths are the folders that may be backed up, each with everything beneath it.
	Paths []string `json:"paths,omitempty"`
	// RestorePaths are the folders a restore may write into (beneath them).
	RestorePaths []string `json:"restore_paths,omitempty"`
	// Databases are the PostgreSQL databases that may be dumped, verified and restored into.
	Databases []string `json:"databases,omitempty"`
	// Postgres says how to reach PostgreSQL; needed when Databases is set.
	Postgres *Postgres `json:"postgres,omitempty"`
}

// Postgres is how the node reaches its PostgreSQL: the folder of its client programs (pg_dump,
// pg_restore, createdb, dropdb, psql; owned by root and writable by no one else) and the connection, whose
// password, if any, comes from the agent user's ~/.pgpass as libpq finds it.
type Postgres struct {
	Bin  string `json:"bin"`
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	User string `json:"user,omitempty"`
}

// Validate checks the section: absolute clean paths, database names pg_dump cannot mistake for
// connection settings, and a Postgres section when databases are named.
func (p *Policy) Validate() error {
	bad := func(field, format string, args ...any) error {
		return errcode.New(errcode.PolicyUntrusted, "backup: "+format, args...).With(errcode.DetailField, "backup."+field)
	}
	for i, r := range p.Paths {
		if !ValidRoot(r) {
			return bad(fmt.Sprintf("paths[%d]", i), "%q is not an absolute clean path below /", r)
		}
	}
	for i, r := range p.RestorePaths {
		if !ValidRoot(r) {
			return bad(fmt.Sprintf("restore_paths[%d]", i), "%q is not an absolute clean path below /", r)
		}
	}
	for i, d := range p.Databases {
		if !ValidDatabaseName(d) {
			return bad(fmt.Sprintf("databases[%d]", i), "%q is not a database name", d)
		}
	}
	if len(p.Databases) > 0 && p.Postgres == nil {
		return bad("postgres", "databases are named but not how to reach PostgreSQL")
	}
	if pg := p.Postgres; pg != nil {
		switch {
		case !filepath.IsAbs(pg.Bin) || filepath.Clean(pg.Bin) != pg.Bin:
			return bad("postgres.bin", "%q is not an absolute clean folder", pg.Bin)
		case strings.ContainsAny(pg.Host, "= '\"\\") || strings.ContainsAny(pg.User, "= '\"\\"):
			return bad("postgres", "host and user are plain names")
		case pg.Port < 0 || pg.Port > 65535:
			return bad("postgres.port", "port %d is out of range", pg.Port)
		}
	}
	return nil
}

// AllowsPath reports whether p lies beneath (or is) one of the folders that may be backed up.
func (p *Policy) AllowsPath(path string) bool { return beneathAny(p.Paths, path) }

// AllowsRestore reports whether a restore may write into path.
func (p *Policy) AllowsRestore(path string) bool { return beneathAny(p.RestorePaths, path) }

// AllowsDatabase reports whether the database may be dumped, verified and restored into.
func (p *Policy) AllowsDatabase(name string) bool { return slices.Contains(p.Databases, name) }

// beneathAny reports whether path, absolute and clean, is one of roots or beneath one.
func beneathAny(roots []string, path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return false
	}
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}

// Beneath reports whether path is root or beneath it; both absolute and clean.
func Beneath(root, path string) bool { return beneathAny([]string{root}, path) }
