// Package sqlagent is the SQL explorer: a ReAct agent that explores a
// database it does not know — list the tables, describe the ones that
// matter, sample rows, run read-only SQL — and answers questions about
// its data with the text, the SQL and the result as a table.
//
// It is built on Loom's parts: agent (the loop, the step budget with a
// progress summary, pause and continue, malformed answers fed back),
// convo (the model's compressed copy of the history), contract (the JSON
// decision) and tool (the five read tools), over datasource (SQLite,
// PostgreSQL, MySQL; read only in three layers). What a conversation
// learns — known tables, schemas, samples, SQL and error history — stays
// in its state and is pinned for every new question, so the model does
// not explore again.
//
// Without a model it still runs SQL the user types, lists tables and
// describes a table, and says which variables configure a model.
package sqlagent
