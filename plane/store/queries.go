package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The SQL of each database lives in sql/<dialect>/: queries.sql for the statements the rules run (and
// queries_<area>.sql for an area kept apart, read after it in name order), and migrations/NNNN_name.sql
// for the schema.
//
//go:embed sql
var sqlFiles embed.FS

// queries holds one database's statements, by the name of their block in queries.sql. Loading fails
// unless every field has a block and every block a field, so the two dialects cannot drift apart
// silently. An empty statement means the database needs nothing there (SQLite's lock blocks).
type queries struct {
	driverQueries // queries_drivers.sql

	MigrationLock, MigrationTable, MigrationList, MigrationInsert string

	JoinLock, JoinCount, JoinPendingByKey, JoinInsert, JoinSetExpires, JoinSetStatus      string
	JoinGet, JoinGetForUpdate, JoinList, JoinDecide, JoinExpireAll, KeyRetired, KeyRetire string

	NodeInsert, NodeGet, NodeGetByName, NodeGetByKey, NodeList, NodeReport, NodeLockShared string
	NodeLock, NodeEndLockJobs, NodeEnd, NodeRefusalAdd, RelaxCommit                        string

	NonceUse, NoncePurge string

	JobInsert, JobClaimable, JobClaim, JobGet, JobFinish, JobLoseRunning, JobCancelQueuedForNode, JobExpire string
	JobCancel, JobMarkFailed, JobList                                                                       string

	TokenInsert, TokenGetByHash, TokenList, TokenGet, TokenRevoke string

	ReleaseLock, ReleaseMaxSequence, ReleaseInsert, ReleaseArtifactInsert, ReleaseCurrent string
	ReleaseGet, ReleaseList, ReleaseArtifacts, ArtifactInsert, ArtifactGet, ArtifactHas   string

	CaseGet, CaseOpenForRecipe, CaseNewest, CaseOpenCount, CaseInsert, CaseClose, CaseSetBody, CaseTouch string
	CaseNoteCount, CaseNoteInsert, CaseNotes, CaseList, CaseNodeState, CaseNodeNoteSeqs                  string

	IncidentOpenFor, IncidentLatestFor, IncidentInsert, IncidentReopen, IncidentClear, IncidentSetTriage string
	IncidentSetCase, IncidentEventNext, IncidentEventInsert, IncidentGet, IncidentGetForUpdate           string
	IncidentList, IncidentEvents, IncidentReconcileLock, IncidentOpenOfEndedNodes, IncidentOpenBySource  string
	DetectSilent, DetectJobs, DetectUntrusted                                                            string

	NotificationInsert, NotificationExhaust, NotificationClaim, NotificationAttemptInsert string
	NotificationRecord, NotificationAttemptUpdate, NotificationGet, NotificationList      string
	NotificationAttempts                                                                  string
}

var (
	blockRE    = regexp.MustCompile(`^-- (name|fragment): ([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	fragmentRE = regexp.MustCompile(`\{\{(\w+)\}\}`)
)

// loadQueries reads the queries of dialect into a queries struct, expanding {{fragment}}s and dropping
// comment lines.
func loadQueries(dialect string) (*queries, error) {
	text, err := queryText(dialect)
	if err != nil {
		return nil, err
	}
	return parseQueries(path.Join("sql", dialect, "queries*.sql"), text)
}

// queryText is sql/<dialect>/queries.sql followed by every queries_<area>.sql in name order, so that an
// area's file can use the main file's fragments.
func queryText(dialect string) (string, error) {
	dir := path.Join("sql", dialect)
	entries, err := fs.ReadDir(sqlFiles, dir)
	if err != nil {
		return "", err
	}
	files := []string{"queries.sql"}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "queries_") && strings.HasSuffix(n, ".sql") {
			files = append(files, n)
		}
	}
	sort.Strings(files[1:])
	var text strings.Builder
	for _, f := range files {
		raw, err := sqlFiles.ReadFile(path.Join(dir, f))
		if err != nil {
			return "", err
		}
		text.Write(raw)
		text.WriteString("\n")
	}
	return text.String(), nil
}

func parseQueries(file, text string) (*queries, error) {
	fragments := map[string]string{}
	named := map[string]string{}
	var kind, name string
	var body []string
	flush := func() error {
		if kind == "" {
			return nil
		}
		sql := strings.TrimSpace(strings.Join(body, "\n"))
		if kind == "fragment" {
			fragments[name] = sql
			return nil
		}
		if _, dup := named[name]; dup {
			return fmt.Errorf("%s: query %s is defined twice", file, name)
		}
		var missing error
		sql = fragmentRE.ReplaceAllStringFunc(sql, func(ref string) string {
			f, ok := fragments[ref[2:len(ref)-2]]
			if !ok {
				missing = fmt.Errorf("%s: query %s uses unknown fragment %s", file, name, ref)
			}
			return f
		})
		named[name] = sql
		return missing
	}
	for _, line := range strings.Split(text, "\n") {
		if m := blockRE.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			kind, name, body = m[1], m[2], nil
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		body = append(body, line)
	}
	if err := flush(); err != nil {
		return nil, err
	}

	q := &queries{}
	v := reflect.ValueOf(q).Elem()
	for _, sf := range reflect.VisibleFields(v.Type()) {
		if sf.Type.Kind() != reflect.String { // an embedded struct of an area's queries
			continue
		}
		f := sf.Name
		sql, ok := named[f]
		if !ok {
			return nil, fmt.Errorf("%s: no query %s", file, f)
		}
		v.FieldByIndex(sf.Index).SetString(sql)
		delete(named, f)
	}
	if len(named) > 0 {
		extra := make([]string, 0, len(named))
		for n := range named {
			extra = append(extra, n)
		}
		sort.Strings(extra)
		return nil, fmt.Errorf("%s: queries no code runs: %s", file, strings.Join(extra, ", "))
	}
	return q, nil
}

// migration is one numbered schema change of one dialect.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationRE = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads sql/<dialect>/migrations in version order. Versions start at 1 and have no
// gaps, so a missing file cannot pass unnoticed.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("sql", dialect, "migrations")
	entries, err := fs.ReadDir(sqlFiles, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		m := migrationRE.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("%s/%s: a migration is named NNNN_name.sql", dir, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := sqlFiles.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: m[2], sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("%s: two migrations are numbered %04d (%s and %s)", dir, out[i].version, out[i-1].name, out[i].name)
		}
	}
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("%s: migration %04d is missing", dir, i+1)
		}
	}
	return out, nil
}
