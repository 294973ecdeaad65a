// Package knowledge keeps what a data analyst agent knows about each data
// source beyond its schema, per agent and per API key (owner):
//
//   - business terms: a term, its meaning or formula, and synonyms
//     (客单价 = sum(payments.amount) / count(DISTINCT payments.order_id));
//   - documents: notes on the data, a title and a text;
//   - examples: a question with the SQL that answers it, shown to the
//     model as few-shot examples and, without a model, run directly when a
//     question matches one closely;
//   - a semantic model: a table's or column's business name and synonyms,
//     and the meaning of its stored values (cancelled → 已取消).
//
// A Store keeps them in Loom's database (SQLite or PostgreSQL, through
// store.DB and the Migrations), every call scoped by the caller's API key:
// one key never sees or changes another's entries. Entries are created,
// listed, read, updated and deleted one by one, or imported from a YAML
// file (File, Parse) idempotently, each entry updated in place by its
// natural key — the term, the title, the question, or table and column.
// Handler serves all of it as JSON over HTTP, with 4xx errors that say
// which field of which entry is wrong.
//
// Demo is the knowledge of the SQL agent's demo shop, embedded as YAML;
// Store.Seed gives it to every owner on first use. Docs and
// SemanticModel turn an owner's knowledge into what retrieval and schema
// recall index.
package knowledge
