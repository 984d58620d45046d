// Package e2e holds the end-to-end tests: the real binaries, built fresh, with a plane and agents as
// processes on loopback, over SQLite and PostgreSQL.
package e2e
