package open

import (
	"context"
	"os"
	"strings"

	"github.com/lexicon-fleet/lexicon/plane/store/internal/postgres"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqldb"
	"github.com/lexicon-fleet/lexicon/plane/store/internal/sqlite"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Kind is what a store snapshot holds: a SQLite database file, or a PostgreSQL dump in pg_dump's
// custom format.
type Kind string

const (
	KindSQLite   Kind = "sqlite"
	KindPostgres Kind = "postgres"
)

// KindOf says which store url names.
func KindOf(url string) Kind {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return KindPostgres
	}
	return KindSQLite
}

func sqlitePath(url string) string { return strings.TrimPrefix(url, "sqlite://") }

// Snapshot writes a consistent snapshot of the store at url to dst, a file that must not exist, while
// the plane may keep serving: SQLite's online backup API, or pg_dump.
func Snapshot(ctx context.Context, url, dst string) (Kind, error) {
	kind := KindOf(url)
	var err error
	if kind == KindPostgres {
		err = postgres.Dump(ctx, url, dst)
	} else {
		if _, serr := os.Stat(sqlitePath(url)); serr != nil {
			return kind, errcode.Wrap(serr, errcode.IOFailed, "no SQLite store at %s", sqlitePath(url))
		}
		err = sqlite.Backup(ctx, sqlitePath(url), dst)
	}
	if err != nil {
		return kind, errcode.Wrap(err, errcode.IOFailed, "cannot snapshot the store %s", sqldb.RedactURL(url))
	}
	return kind, nil
}

// Restore loads a snapshot of kind from src into the store at url, which must be empty: a SQLite file
// that does not exist yet, a PostgreSQL database (or schema) without the plane's tables. The store is
// then opened once, which migrates it to this build's schema.
func Restore(ctx context.Context, kind Kind, src, url string) error {
	if KindOf(url) != kind {
		return errcode.New(errcode.UsageInvalid, "the backup holds a %s store; %s is not one", kind, sqldb.RedactURL(url))
	}
	if kind == KindPostgres {
		if err := postgres.Restore(ctx, url, src); err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot restore into %s (is it empty?)", sqldb.RedactURL(url))
		}
	} else {
		dst := sqlitePath(url)
		data, err := os.ReadFile(src)
		if err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot read the snapshot")
		}
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return errcode.Wrap(err, errcode.IOFailed, "cannot restore into %s: it must not exist yet", dst)
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			_ = os.Remove(dst)
			return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", dst)
		}
		if err := f.Sync(); err != nil || f.Close() != nil {
			_ = os.Remove(dst)
			return errcode.Wrap(err, errcode.IOFailed, "cannot write %s", dst)
		}
	}
	s, err := URL(ctx, url)
	if err != nil {
		return err
	}
	return s.Close()
}
