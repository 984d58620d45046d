package postgres

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// libpqURL is url as pg_dump and pg_restore take it, without the parameters only pgx knows
// (search_path, pool_*), and the schema the plane's tables live in ("" for the default).
func libpqURL(raw string) (string, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("the store URL is not a URL")
	}
	q := u.Query()
	schema := strings.TrimSpace(strings.Split(q.Get("search_path"), ",")[0])
	for k := range q {
		if k == "search_path" || strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// Dump writes the plane's schema at url to dst in pg_dump's custom format: one consistent snapshot
// (pg_dump reads in one repeatable-read transaction) while the plane keeps serving.
func Dump(ctx context.Context, rawURL, dst string) error {
	u, schema, err := libpqURL(rawURL)
	if err != nil {
		return err
	}
	args := []string{"--format=custom", "--no-owner", "--no-privileges", "--file=" + dst}
	if schema != "" {
		args = append(args, "--schema="+schema)
	}
	out, err := exec.CommandContext(ctx, "pg_dump", append(args, u)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_dump: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Restore loads a Dump into the database at url, in one transaction: a database that already holds the
// plane's tables (or its schema) refuses it, and nothing is left half-restored.
func Restore(ctx context.Context, rawURL, src string) error {
	u, _, err := libpqURL(rawURL)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "pg_restore", "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
		"--dbname="+u, src).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_restore: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
