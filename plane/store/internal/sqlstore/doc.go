// Package sqlstore is the one implementation of store.Store: every rule of the plane's state is
// written here once, against a sqldb.Driver that runs its database's SQL. It is written in the
// vocabulary of package store (its params, rows, states and limits), which it imports with a dot so
// that the rules read as they did when they lived beside those types. Callers reach it only through
// the constructors in plane/store/open.
package sqlstore
