// Package sqlitecache is a database/sql driver over modernc's SQLite ("sqlite") that keeps each
// connection's prepared statements. modernc's driver compiles every statement it runs anew (its
// transpiled parser, under the one connection the embedded server writes through): during a
// 50-session burst that was 13 % of the worker's CPU, and the door took 5,000 messages in 48-53 s
// instead of 40-41 s. Here a statement run once is kept, compiled, and run again with new
// arguments, as SQLite's own sqlite3_reset and sqlite3_bind intend.
//
// The embedded server reaches it through its own copy of Temporal's SQLite plugin
// (sqliteplugin), which names this driver; everything else of modernc's driver (its errors, its
// connection settings, its transactions) passes through unchanged.
package sqlitecache

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // registers "sqlite", which this driver wraps
)

// DriverName is the name this driver is registered under with database/sql.
const DriverName = "intentq-sqlite"

// MaxStatements bounds the statements a connection keeps: Temporal's persistence runs about a
// hundred distinct ones; the rest (a list with a varying number of arguments, a visibility
// query) are dropped least recently used first.
const MaxStatements = 256

func init() {
	sql.Register(DriverName, &Driver{})
}

// base is modernc's driver, as it registered itself.
var base = sync.OnceValues(func() (driver.Driver, error) {
	db, err := sql.Open("sqlite", "")
	if err != nil {
		return nil, fmt.Errorf("sqlitecache: modernc's driver: %w", err)
	}
	d := db.Driver()
	_ = db.Close() // it opened no connection
	return d, nil
})

// Driver opens modernc's connections and keeps each one's statements.
type Driver struct{}

// Stats are this process's figures for the driver.
type Stats struct {
	// Connections opened; Runs of a statement on them, of which Kept ran on a statement
	// compiled before.
	Connections, Runs, Kept int64
}

var stats struct{ connections, runs, kept atomic.Int64 }

// Counts returns this process's figures so far.
func Counts() Stats {
	return Stats{Connections: stats.connections.Load(), Runs: stats.runs.Load(), Kept: stats.kept.Load()}
}

// inner is what this package needs of a modernc connection.
type inner interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// Open opens a connection to the database name names, as modernc's driver reads it.
func (Driver) Open(name string) (driver.Conn, error) {
	d, err := base()
	if err != nil {
		return nil, err
	}
	c, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	in, ok := c.(inner)
	if !ok {
		_ = c.Close()
		return nil, fmt.Errorf("sqlitecache: modernc's connection (%T) lacks a method this driver needs", c)
	}
	stats.connections.Add(1)
	return &Conn{in: in, byQuery: map[string]*list.Element{}, order: list.New()}, nil
}

// Conn is one connection with its statements. database/sql calls a connection, and the rows it
// returned, under one lock of its own; mu keeps the cache consistent besides.
type Conn struct {
	in inner

	mu      sync.Mutex
	byQuery map[string]*list.Element // of *cached, most recently used at the front of order
	order   *list.List
	closed  bool
}

// cached is one kept statement; busy while it runs or its rows are open (a second use of the
// same text meanwhile gets a statement of its own); closed once evicted while busy, so its last
// user finalises it.
type cached struct {
	query   string
	stmt    runner
	busy    bool
	evicted bool
}

// take returns the kept statement for query, marked busy, preparing and keeping it when it is
// not kept yet; nil (and no error) when the kept one is busy.
func (c *Conn) take(ctx context.Context, query string) (*cached, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	stats.runs.Add(1)
	if e, ok := c.byQuery[query]; ok {
		s := e.Value.(*cached)
		if s.busy {
			return nil, nil
		}
		c.order.MoveToFront(e)
		s.busy = true
		stats.kept.Add(1)
		return s, nil
	}
	st, err := c.in.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	run, ok := st.(runner)
	if !ok {
		// Not a statement this driver can run with a context: the connection's own way.
		_ = st.Close()
		return nil, nil
	}
	s := &cached{query: query, stmt: run, busy: true}
	c.byQuery[query] = c.order.PushFront(s)
	for e := c.order.Back(); c.order.Len() > MaxStatements && e != nil; {
		prev := e.Prev()
		_ = c.evict(e)
		e = prev
	}
	return s, nil
}

// evict drops e from the cache: closed now (with Close's error), or by its user when busy.
func (c *Conn) evict(e *list.Element) error {
	s := e.Value.(*cached)
	c.order.Remove(e)
	delete(c.byQuery, s.query)
	if s.busy {
		s.evicted = true
		return nil
	}
	return s.stmt.Close()
}

// give returns s after use: it is free again, or closed when it was evicted meanwhile (not once
// the connection is closed: its statements went with it).
func (c *Conn) give(s *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.busy = false
	if s.evicted && !c.closed {
		_ = s.stmt.Close()
	}
}

// runner is a statement run with a context, as modernc's are.
type runner interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// ExecContext runs query with args on its kept statement.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.in.ExecContext(ctx, query, args)
	}
	defer c.give(s)
	return s.stmt.ExecContext(ctx, args)
}

// QueryContext runs query with args on its kept statement, which its rows hold until closed.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.in.QueryContext(ctx, query, args)
	}
	r, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		c.give(s)
		return nil, err
	}
	return &Rows{Rows: r, conn: c, stmt: s}, nil
}

// Close closes the kept statements and the connection. database/sql closes no connection whose
// rows are open; should that happen, their statements are left to the connection's close.
func (c *Conn) Close() error {
	c.mu.Lock()
	var errs []error
	for e := c.order.Front(); e != nil; e = c.order.Front() {
		errs = append(errs, c.evict(e))
	}
	c.closed = true
	c.mu.Unlock()
	return errors.Join(append(errs, c.in.Close())...)
}

// isClosed reports whether Close has run.
func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Prepare prepares a statement the caller owns (not kept).
func (c *Conn) Prepare(query string) (driver.Stmt, error) { return c.in.Prepare(query) }

// PrepareContext prepares a statement the caller owns (not kept).
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.in.PrepareContext(ctx, query)
}

// Begin begins a transaction.
//
// Deprecated: database/sql calls BeginTx.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.in.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx begins a transaction, as modernc's driver does.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.in.BeginTx(ctx, opts)
}

// Ping checks the connection.
func (c *Conn) Ping(ctx context.Context) error { return c.in.Ping(ctx) }

// ResetSession readies the connection for its next user.
func (c *Conn) ResetSession(ctx context.Context) error { return c.in.ResetSession(ctx) }

// IsValid reports whether the connection can be used again.
func (c *Conn) IsValid() bool { return c.in.IsValid() }

// Rows are a kept statement's rows; closing them frees the statement.
type Rows struct {
	driver.Rows
	conn   *Conn
	stmt   *cached
	closed bool
}

// Close closes the rows and frees their statement, once: a second Close would reset the
// statement under the rows of its next use.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.conn.isClosed() {
		return nil // the statement went with the connection
	}
	err := r.Rows.Close()
	r.conn.give(r.stmt)
	return err
}

// The column details modernc's rows give, passed on.
type columnTypes interface {
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// ColumnTypeDatabaseTypeName is the column's declared type.
func (r *Rows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(columnTypes); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeLength is the column's length, when it has one.
func (r *Rows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(columnTypes); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

// ColumnTypeNullable says whether the column may be NULL, when known.
func (r *Rows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(columnTypes); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

// ColumnTypePrecisionScale is the column's precision and scale, when it has them.
func (r *Rows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(columnTypes); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

// ColumnTypeScanType is the Go type the column scans into.
func (r *Rows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(columnTypes); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
