// Package datasource opens users' databases — SQLite files, PostgreSQL and
// MySQL or MariaDB — read only, and lets a model or a person explore them:
// tables and views with columns, keys, indexes and row counts; bounded
// samples; statements with a timeout, a row cap and a byte cap, their
// values typed for JSON; and EXPLAIN.
//
// # Read only by construction
//
// Every statement passes three layers, each of which stops a write on its
// own:
//
//  1. Check reads the statement by the dialect's lexical rules (strings,
//     quoted names, comments, dollar quoting, MySQL's executable comments)
//     and, for PostgreSQL, with PostgreSQL's own parser (libpg_query): it
//     must be exactly one query — SELECT, WITH without data-modifying
//     parts, VALUES, TABLE, EXPLAIN of a query, SHOW and DESCRIBE where the
//     dialect has them.
//  2. Functions and clauses with side effects are refused even inside a
//     SELECT: the Denylist (server files, large objects, sleeps, locks,
//     sequences, settings, signals, remote links, INTO OUTFILE, …), kept as
//     data with a test for each entry.
//  3. The engine: SQLite files are opened mode=ro with query_only, and
//     SQLite's authorizer (its own parser's verdict on every action of a
//     statement it compiles) admits only reads; PostgreSQL statements run
//     in a READ ONLY transaction with statement_timeout; MySQL statements
//     in START TRANSACTION READ ONLY with max_execution_time (MariaDB:
//     max_statement_time).
//
// MySQL commits DDL implicitly, even inside a read-only transaction, and
// a superuser may read and write server files from a read-only
// transaction (COPY … TO PROGRAM, INTO OUTFILE): connect as an account that
// may only read, as the repository's README shows for each engine.
//
// A refused statement is a *RefusedError whose Reason is one line a model
// can act on ("only one read-only statement is allowed; found DELETE").
// A string that contains a keyword is not that keyword: SELECT 'DROP
// TABLE x' runs.
//
// Passwords never appear in String, errors or results.
package datasource
