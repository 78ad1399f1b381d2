package sqlitecache

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

func open(t testing.TB, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open(name, filepath.Join(t.TempDir(), "t.db")+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	_, err = db.Exec(`CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
	require.NoError(t, err)
	return db
}

// kept is how many statements the one connection of db keeps.
func kept(t *testing.T, db *sql.DB) int {
	t.Helper()
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	n := 0
	require.NoError(t, conn.Raw(func(dc any) error {
		c := dc.(*Conn)
		c.mu.Lock()
		defer c.mu.Unlock()
		n = c.order.Len()
		return nil
	}))
	return n
}

// A statement run again runs kept, with its new arguments; reads see what was written; the
// database's errors are modernc's, and a statement that failed runs again.
func TestKeptStatementsRunWithNewArguments(t *testing.T) {
	db := open(t, DriverName)
	for i := range 100 {
		_, err := db.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i))
		require.NoError(t, err)
	}
	for _, i := range []int{0, 42, 99} {
		var v string
		require.NoError(t, db.QueryRow(`SELECT v FROM kv WHERE k = ?`, i).Scan(&v))
		require.Equal(t, fmt.Sprint("v", i), v)
	}
	require.Equal(t, 2+1, kept(t, db), "the insert, the select and the CREATE TABLE")

	_, err := db.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, 42, "again")
	var serr *sqlite.Error
	require.True(t, errors.As(err, &serr), "%v", err)
	require.NotZero(t, serr.Code()&sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	_, err = db.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, 100, "after")
	require.NoError(t, err, "the statement that failed runs again")
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM kv`).Scan(&n))
	require.Equal(t, 101, n)
}

// The same query while its rows are still open (in a transaction) gets a statement of its own,
// and both read all their rows.
func TestSameQueryWhileItsRowsAreOpen(t *testing.T) {
	db := open(t, DriverName)
	for i := range 10 {
		_, err := db.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i))
		require.NoError(t, err)
	}
	tx, err := db.Begin()
	require.NoError(t, err)
	defer tx.Rollback() //nolint:errcheck // read only
	const q = `SELECT k FROM kv WHERE k >= ? ORDER BY k`
	outer, err := tx.Query(q, 0)
	require.NoError(t, err)
	var got []int
	for outer.Next() {
		var k int
		require.NoError(t, outer.Scan(&k))
		inner, err := tx.Query(q, k)
		require.NoError(t, err)
		n := 0
		for inner.Next() {
			n++
		}
		require.NoError(t, inner.Err())
		require.NoError(t, inner.Close())
		require.Equal(t, 10-k, n)
		got = append(got, k)
	}
	require.NoError(t, outer.Err())
	require.NoError(t, outer.Close())
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got)
	require.NoError(t, tx.Commit())
}

// A connection keeps at most MaxStatements; a statement dropped while its rows are open is
// closed once they are.
func TestKeepsAtMostMaxStatements(t *testing.T) {
	db := open(t, DriverName)
	_, err := db.Exec(`INSERT INTO kv (k, v) VALUES (1, 'one')`)
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	rows, err := tx.Query(`SELECT v FROM kv WHERE k = ? OR k = 0`, 1)
	require.NoError(t, err)
	for i := range MaxStatements + 10 {
		var v string
		require.NoError(t, tx.QueryRow(fmt.Sprintf(`SELECT v FROM kv WHERE k = ? AND %d = %d`, i, i), 1).Scan(&v))
	}
	require.True(t, rows.Next(), "rows of a dropped statement still read")
	var v string
	require.NoError(t, rows.Scan(&v))
	require.Equal(t, "one", v)
	require.NoError(t, rows.Close())
	require.NoError(t, tx.Commit())
	require.Equal(t, MaxStatements, kept(t, db))
}

// A query cancelled while it runs leaves its statement usable.
func TestCancelledQueryLeavesItsStatementUsable(t *testing.T) {
	db := open(t, DriverName)
	const q = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT count(*) FROM n`
	var n int
	require.NoError(t, db.QueryRow(q, 10).Scan(&n), "kept before it is cancelled")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, db.QueryRowContext(ctx, q, 1_000_000_000).Scan(&n), context.DeadlineExceeded)
	require.NoError(t, db.QueryRow(q, 1000).Scan(&n))
	require.Equal(t, 1000, n)
}

// BenchmarkStatements (issue 38) runs a write and a read the way Temporal's persistence does,
// on modernc's driver and on this one: each statement compiled anew, or kept.
func BenchmarkStatements(b *testing.B) {
	for _, name := range []string{"sqlite", DriverName} {
		b.Run(name, func(b *testing.B) {
			db := open(b, name)
			const write = `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
			const read = `SELECT k, v FROM kv WHERE k = ? AND v IS NOT NULL`
			for i := 0; b.Loop(); i++ {
				if _, err := db.Exec(write, i%1000, "value"); err != nil {
					b.Fatal(err)
				}
				var k int
				var v string
				if err := db.QueryRow(read, i%1000).Scan(&k, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// At the driver's own level (database/sql never does either): rows closed twice leave the
// statement's next rows alone, and rows closed after their connection do not reach into it.
func TestRowsClosedTwiceOrAfterTheirConnection(t *testing.T) {
	ctx := context.Background()
	dc, err := Driver{}.Open(filepath.Join(t.TempDir(), "d.db"))
	require.NoError(t, err)
	c := dc.(*Conn)
	_, err = c.ExecContext(ctx, `CREATE TABLE n (i INTEGER)`, nil)
	require.NoError(t, err)
	_, err = c.ExecContext(ctx, `INSERT INTO n VALUES (1), (2), (3)`, nil)
	require.NoError(t, err)
	const q = `SELECT i FROM n ORDER BY i`
	next := func(r driver.Rows) any {
		row := make([]driver.Value, 1)
		if err := r.Next(row); err != nil {
			return err
		}
		return row[0]
	}
	r1, err := c.QueryContext(ctx, q, nil)
	require.NoError(t, err)
	require.NoError(t, r1.Close())
	r2, err := c.QueryContext(ctx, q, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, next(r2))
	require.NoError(t, r1.Close())
	require.EqualValues(t, 2, next(r2), "the second Close of the first rows reset the statement")
	require.EqualValues(t, 3, next(r2))

	require.NoError(t, c.Close())
	require.NoError(t, r2.Close(), "rows closed after their connection")
}
