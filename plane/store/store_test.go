package store_test

import (
	"testing"

	"github.com/lexicon-fleet/lexicon/plane/store/storetest"
)

func TestSQLite(t *testing.T) { storetest.Run(t, storetest.SQLiteOpener) }

func TestPostgres(t *testing.T) { storetest.Run(t, storetest.PostgresOpener) }

func BenchmarkSQLite(b *testing.B) { storetest.Bench(b, storetest.SQLiteOpener) }

func BenchmarkPostgres(b *testing.B) { storetest.Bench(b, storetest.PostgresOpener) }
