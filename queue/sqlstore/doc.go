// Package sqlstore is the logic of a SQL job store written once: the
// tenant and group scheduler (admit, hold, release, fair order, groups, due
// work) and the store operations around it, above a small set of named
// statements per dialect. Package pgqueue (PostgreSQL) and package
// sqlitequeue (SQLite) are its dialects: each keeps only its SQL text, its
// locking, its set-based fast paths and triggers, and its migrations.
//
// The shared code never builds SQL: it runs the statements a dialect gives
// it, inside the dialect's transaction (a Tx), and asks the dialect for
// the steps that differ in kind rather than in syntax.
package sqlstore
