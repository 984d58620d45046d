package sqldb

import (
	"context"
	"sync/atomic"
)

// Counts is how much a store has asked of its database: every statement sent (BEGIN and COMMIT left
// out), and every explicit transaction (a Tx or a Pipeline; an autocommit statement is not one). Plain
// atomics, so that counting costs nothing a hot path would notice; the load harness reads them through
// store.Counter, and metrics may.
type Counts struct {
	statements, transactions atomic.Int64
}

// Load returns the counts so far.
func (c *Counts) Load() (statements, transactions int64) {
	return c.statements.Load(), c.transactions.Load()
}

// AddStatements counts n statements sent outside an Execer (a pipeline's).
func (c *Counts) AddStatements(n int) { c.statements.Add(int64(n)) }

// AddTransaction counts one explicit transaction.
func (c *Counts) AddTransaction() { c.transactions.Add(1) }

// Count wraps ex so that every statement it runs is counted.
func (c *Counts) Count(ex Execer) Execer { return counted{ex, c} }

type counted struct {
	ex Execer
	c  *Counts
}

func (x counted) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	x.c.statements.Add(1)
	return x.ex.Exec(ctx, query, args...)
}

func (x counted) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	x.c.statements.Add(1)
	return x.ex.Query(ctx, query, args...)
}

func (x counted) QueryRow(ctx context.Context, query string, args ...any) Row {
	x.c.statements.Add(1)
	return x.ex.QueryRow(ctx, query, args...)
}
