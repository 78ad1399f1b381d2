package embedded_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/intentq/intentq/internal/platform/embedded"
	"github.com/intentq/intentq/internal/platform/embedded/sqlitecache"
	"github.com/intentq/intentq/workflows"
)

// listed waits until query lists the workflow id (visibility is eventually consistent).
func listed(t *testing.T, c client.Client, query, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		if err == nil && len(resp.GetExecutions()) == 1 && resp.GetExecutions()[0].GetExecution().GetWorkflowId() == id {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lists %v (%v), want %s", query, resp.GetExecutions(), err, id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openDB opens a SQLite file of the data directory.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	// The server writes the same files (at its start too): wait for its lock rather than fail
	// with SQLITE_BUSY on a loaded machine.
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(60000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// firstColumn is the first column of every row of query.
func firstColumn(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVisibilityOnItsOwnFile (issue 38): the visibility store lives in VisibilityFile, with the
// indexes intentq's lists and the Web UI use, and a data directory from before (its visibility
// rows in DBFile) keeps what it listed: the rows move at the next start, and lists by intentq's
// search attributes find them. Both stores run on the driver that keeps compiled statements.
func TestVisibilityOnItsOwnFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	opts := options(t, dir, 24*time.Hour)
	before := sqlitecache.Counts()
	s1, err := embedded.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	c1 := dial(t, s1)
	const id = "vis/pending"
	const query = "IntentSession = 'alpha' AND IntentStatus = 'pending'"
	// No worker: the workflow stays open with its search attributes as started.
	if _, err := c1.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.IntentSessionKey.ValueSet("alpha"), workflows.IntentStatusKey.ValueSet("pending"))},
		"NoSuchWorkflow"); err != nil {
		t.Fatal(err)
	}
	listed(t, c1, query, id)
	// A connection each (the history's file and the visibility file), and statements run again
	// on what they kept. How many were kept depends on how busy the new server was (a slow run
	// of make test kept 144 of 292): that is BenchmarkStatements' to say, not this test's.
	if got := sqlitecache.Counts(); got.Connections-before.Connections < 2 || got.Kept == before.Kept {
		t.Errorf("the stores are not on the driver that keeps statements: %+v, before the start %+v", got, before)
	}
	c1.Close()
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}

	vis := openDB(t, filepath.Join(dir, embedded.VisibilityFile))
	indexes := firstColumn(t, vis, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'executions_visibility' AND name NOT LIKE 'sqlite_%'`)
	for _, want := range []string{"default_idx", "by_workflow_type", "by_status", "by_keyword_01", "by_keyword_10", "by_datetime_01"} {
		if !slices.Contains(indexes, want) {
			t.Errorf("index %s missing: %v", want, indexes)
		}
	}
	for _, gone := range []string{"by_bool_01", "by_int_01", "by_double_01", "by_history_length", "by_temporal_keyword_01", "by_batcher_user"} {
		if slices.Contains(indexes, gone) {
			t.Errorf("index %s kept (intentq queries nothing by it): %v", gone, indexes)
		}
	}
	if n := firstColumn(t, openDB(t, filepath.Join(dir, embedded.DBFile)), `SELECT count(*) FROM executions_visibility`); n[0] != "0" {
		t.Errorf("%s holds %s visibility rows, want none", embedded.DBFile, n[0])
	}

	// The data directory as an older intentq left it: the visibility rows in DBFile, no
	// VisibilityFile. A copy: this process's server keeps its connections to the first one's
	// files (Temporal's SQLite plugin closes none), a new worker process would not.
	old := t.TempDir()
	if err := os.CopyFS(old, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	mainPath, visPath := filepath.Join(old, embedded.DBFile), filepath.Join(old, embedded.VisibilityFile)
	vis = openDB(t, visPath)
	main := openDB(t, mainPath)
	cols := strings.Join(firstColumn(t, vis, `SELECT name FROM pragma_table_xinfo('executions_visibility') WHERE hidden = 0`), ", ")
	if _, err := main.Exec(`ATTACH DATABASE ? AS vis`, visPath); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Exec(fmt.Sprintf(`INSERT INTO main.executions_visibility (%s) SELECT %s FROM vis.executions_visibility`, cols, cols)); err != nil {
		t.Fatal(err)
	}
	// Marked, so that only the moved row can answer the list below (not one the server writes
	// again).
	if _, err := main.Exec(`UPDATE executions_visibility SET search_attributes = replace(search_attributes, '"alpha"', '"moved"')`); err != nil {
		t.Fatal(err)
	}
	_ = vis.Close()
	_ = main.Close()
	for _, f := range []string{visPath, visPath + "-wal", visPath + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}

	s2, err := embedded.Start(ctx, options(t, old, 24*time.Hour))
	if err != nil {
		t.Fatalf("start on a data dir from before: %v", err)
	}
	defer s2.Stop()
	c2 := dial(t, s2)
	defer c2.Close()
	listed(t, c2, strings.Replace(query, "alpha", "moved", 1), id)
	if _, err := os.Stat(visPath + ".new"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file built for the move is left behind: %v", err)
	}
}

// TestVisibilityListsBesideItsWriter (issue 38): a list is answered while the visibility
// writer waits to commit. Another connection holds the visibility file's write lock, as a long
// commit does; the server's insert of a new workflow's row then waits for it, holding its
// connection, and lists must still come back at once. With one connection for both, every list
// waited behind the insert (a hook's list took up to 214 ms behind a burst's inserts).
func TestVisibilityListsBesideItsWriter(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := embedded.Start(ctx, options(t, dir, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	c := dial(t, s)
	t.Cleanup(c.Close)

	lock, err := openDB(t, filepath.Join(dir, embedded.VisibilityFile)).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const id = "vis/held"
	const query = "IntentSession = 'held' AND IntentStatus = 'pending'"
	if _, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(workflows.IntentSessionKey.ValueSet("held"), workflows.IntentStatusKey.ValueSet("pending"))},
		"NoSuchWorkflow"); err != nil {
		t.Fatal(err)
	}
	// The insert is queued at once and waits for the lock (busy_timeout, 10 s) from its first
	// try: lists for 2 s meet it holding its connection.
	lists := 0
	for began := time.Now(); time.Since(began) < 2*time.Second || lists < 10; lists++ {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		resp, err := c.ListWorkflow(lctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query})
		cancel()
		if err != nil {
			t.Fatalf("list %d while the writer waits: %v", lists+1, err)
		}
		if n := len(resp.GetExecutions()); n != 0 {
			t.Fatalf("list %d shows %d rows written while the file was locked", lists+1, n)
		}
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	listed(t, c, query, id) // the insert was waiting, and lands once the lock is gone
}
