package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	msqlite "modernc.org/sqlite"
)

// Backup copies the database at path to dst, a file that must not exist, with SQLite's online backup
// API: a consistent snapshot taken while the plane keeps serving (the copy restarts on its own when a
// write lands during it). The copy is a database file itself.
func Backup(ctx context.Context, path, dst string) error {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		src, ok := dc.(interface {
			NewBackup(dstURI string) (*msqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver offers no backup API")
		}
		b, err := src.NewBackup(dst)
		if err != nil {
			return err
		}
		for {
			more, err := b.Step(-1)
			if err != nil {
				_ = b.Finish()
				return err
			}
			if !more {
				return b.Finish()
			}
		}
	})
}
