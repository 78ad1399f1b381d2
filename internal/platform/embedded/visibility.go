package embedded

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	serverconfig "go.temporal.io/server/common/config"
	"go.temporal.io/server/common/persistence"
	"go.temporal.io/server/schema"
	_ "modernc.org/sqlite" // the "sqlite" driver, as Temporal's plugin registers it
)

// VisibilityFile is the embedded server's visibility store (the lists behind `starter pending`,
// the hooks' lists and the Web UI), a SQLite database of its own beside DBFile (issue 38).
//
// Temporal's SQLite plugin gives each database file one connection, shared by every store in
// it. With visibility in DBFile, a hook's list of pending intents waited behind the burst's
// history writes (40-180 ms for a 1 ms query), and every intent's visibility row (an insert
// into a table with 59 indexes) took the connection from them. In a file of its own the lists
// and the visibility writes have their own connection, and the history writes theirs.
const VisibilityFile = "visibility.db"

// visibilityIndexes are the indexes of Temporal's visibility table that the embedded server
// keeps besides those on intentq's own search attributes (visibilityKeeps): the default order
// and the Web UI's common filters. Temporal's schema indexes every predefined and pre-allocated
// search attribute; each insert and update of a row writes every index (most of the row's
// cost: 2.7 ms of CPU per intent with all 59, 1.7 ms with these), and intentq uses neither
// schedules, batch jobs, deployments, CHASM nor parent workflows. A query on an attribute whose
// index is gone still answers (it filters the namespace's rows), only not from an index.
var visibilityIndexes = map[string]bool{
	"default_idx": true, "by_execution_time": true, "by_workflow_id": true,
	"by_workflow_type": true, "by_status": true, "by_task_queue": true,
}

// customIndex is the name of an index on a pre-allocated custom search attribute column
// (by_keyword_01, by_datetime_02, ...): the type is the first group.
var customIndex = regexp.MustCompile(`^by_(bool|datetime|double|int|keyword)_\d+$`)

// customIndexType maps customIndex's type names to the search attribute types they hold.
var customIndexType = map[string]enumspb.IndexedValueType{
	"bool":     enumspb.INDEXED_VALUE_TYPE_BOOL,
	"datetime": enumspb.INDEXED_VALUE_TYPE_DATETIME,
	"double":   enumspb.INDEXED_VALUE_TYPE_DOUBLE,
	"int":      enumspb.INDEXED_VALUE_TYPE_INT,
	"keyword":  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// visibilityKeeps reports whether the index name stays: one of visibilityIndexes, SQLite's
// own (the primary key's), or one on a custom column of a type some of attrs have (which
// column an attribute gets is the namespace's choice).
func visibilityKeeps(name string, attrs map[string]enumspb.IndexedValueType) bool {
	if visibilityIndexes[name] || strings.HasPrefix(name, "sqlite_") {
		return true
	}
	m := customIndex.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	for _, t := range attrs {
		if t == customIndexType[m[1]] {
			return true
		}
	}
	return false
}

// prepareVisibility returns the visibility store's configuration, creating its file when
// missing: on a data directory from before it existed, the rows of DBFile's visibility table
// are copied into it first (built under a temporary name and renamed, so a crash leaves either
// no file, done again at the next start, or the whole one). A visibility file beside a new
// DBFile (mainNew: the history was deleted) lists workflows that are gone: it is made anew.
// The indexes intentq does not use (visibilityKeeps) are dropped, in a new file before the
// copy, and in a file of any age (made by a build that kept more).
//
// The file commits at synchronous=full: a row is on disk before the history service counts its
// task done, as it was when both lived in one log. It has VisibilityConns connections, so that
// lists are read beside the writer.
func prepareVisibility(main *serverconfig.SQL, mainNew bool, attrs map[string]enumspb.IndexedValueType) (*serverconfig.SQL, error) {
	vis := *main
	vis.DatabaseName = filepath.Join(filepath.Dir(main.DatabaseName), VisibilityFile)
	vis.ConnectAttributes = maps.Clone(main.ConnectAttributes)
	vis.ConnectAttributes["synchronous"] = "full"
	vis.MaxConns, vis.MaxIdleConns = VisibilityConns, VisibilityConns
	if mainNew {
		if err := removeDatabase(vis.DatabaseName); err != nil {
			return nil, fmt.Errorf("embedded temporal: %w", err)
		}
	}
	if _, err := os.Stat(vis.DatabaseName); errors.Is(err, os.ErrNotExist) {
		if err := createVisibility(main.DatabaseName, vis.DatabaseName, attrs); err != nil {
			return nil, fmt.Errorf("embedded temporal: create %s: %w", vis.DatabaseName, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("embedded temporal: %w", err)
	} else if err := slimFile(vis.DatabaseName, attrs); err != nil {
		return nil, fmt.Errorf("embedded temporal: %s: %w", vis.DatabaseName, err)
	}
	return &vis, nil
}

// createVisibility builds the visibility database at path from Temporal's visibility schema
// (slimmed first, so the copy writes only the indexes that stay) and the rows of the visibility
// table in mainPath, under a temporary name (a rollback journal
// while it is built: once closed, the file is whole on its own), then renames it into place.
// It uses a connection of its own: Temporal's plugin keeps every connection it opens for the
// process's life (sqlite.SetupSchema's would stay open on the file after the rename).
func createVisibility(mainPath, path string, attrs map[string]enumspb.IndexedValueType) error {
	tmp := path + ".new"
	if err := removeDatabase(tmp); err != nil {
		return err
	}
	db, err := sql.Open("sqlite", tmp)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1) // ATTACH holds for one connection
	if err := visibilitySchema(db); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if err := slimVisibility(db, attrs); err != nil {
		return err
	}
	if err := copyVisibilityRows(db, mainPath); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := FileSync(tmp)(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return FileSync(filepath.Dir(path))()
}

// visibilitySchemaFile is Temporal's SQLite visibility schema among its embedded schemas.
const visibilitySchemaFile = "sqlite/v3/visibility/schema.sql"

// visibilitySchema creates Temporal's visibility tables in db.
func visibilitySchema(db *sql.DB) error {
	f, err := schema.Assets().Open(visibilitySchemaFile)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	statements, err := persistence.LoadAndSplitQueryFromReaders([]io.Reader{f})
	if err != nil {
		return err
	}
	for _, stmt := range statements {
		if _, err := db.Exec(stmt); err != nil {
			return err
		}
	}
	return nil
}

// copyVisibilityRows copies the visibility rows of the database at from into db's: the columns
// that are stored (the generated ones and the full-text tables follow from them).
func copyVisibilityRows(db *sql.DB, from string) error {
	if _, err := db.Exec(`ATTACH DATABASE ? AS old`, from); err != nil {
		return fmt.Errorf("open %s: %w", from, err)
	}
	defer func() { _, _ = db.Exec(`DETACH DATABASE old`) }()
	cols, err := column(db, `SELECT name FROM pragma_table_xinfo('executions_visibility') WHERE hidden = 0`)
	if err != nil {
		return fmt.Errorf("columns: %w", err)
	}
	for i, c := range cols {
		cols[i] = quote(c)
	}
	list := strings.Join(cols, ", ")
	if _, err := db.Exec(`INSERT INTO main.executions_visibility (` + list + `) SELECT ` + list + ` FROM old.executions_visibility`); err != nil {
		return fmt.Errorf("copy the visibility rows of %s: %w", from, err)
	}
	return nil
}

// column is the first column of the rows query returns, as text.
func column(db *sql.DB, query string) ([]string, error) {
	rows, err := db.Query(query)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, s)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// quote is name as an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// slimFile drops the unused indexes (slimVisibility) of the visibility database at path.
func slimFile(path string, attrs map[string]enumspb.IndexedValueType) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	if err := slimVisibility(db, attrs); err != nil {
		return err
	}
	return db.Close()
}

// slimVisibility drops the visibility table's indexes that visibilityKeeps does not keep.
func slimVisibility(db *sql.DB, attrs map[string]enumspb.IndexedValueType) error {
	names, err := column(db, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility'`)
	if err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	for _, name := range names {
		if visibilityKeeps(name, attrs) {
			continue
		}
		if _, err := db.Exec(`DROP INDEX IF EXISTS ` + quote(name)); err != nil {
			return fmt.Errorf("drop index %s: %w", name, err)
		}
	}
	return nil
}

// removeDatabase removes the SQLite database at path with its journal, log and shared memory.
func removeDatabase(path string) error {
	for _, f := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
