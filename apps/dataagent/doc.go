// Package dataagent is the data analyst: it answers a question about a
// database with a plan, checked SQL, Python analysis in a sandbox, and a
// report with charts.
//
// Its graph is the analyst's workflow, every branch a declared route and
// every retry a bounded loop:
//
//	intent_recognition   small talk or an analysis request (a typed decision)
//	evidence_recall      business terms, documents and question → SQL examples
//	query_enhance        the question made to stand on its own, with rewordings
//	schema_recall        the tables it needs, expanded along keys, packed to a token budget
//	table_relation       the joins between them (retried < 3 on a database error)
//	feasibility_assessment  can these tables answer it (a typed decision)
//	planner              steps of sql, python and report
//	plan_executor        validates the plan (2 repairs), dispatches each step
//	human_feedback       waits for approval when the request asks (graph.Ask)
//	sql_generate         one statement a step (< 10 tries; the same SQL twice is a failure)
//	semantic_consistency the guard's verdict, then the model's check
//	sql_execute          the statement through datasource's read-only path
//	python_generate      analysis code for the sandbox
//	python_execute       the code under bubblewrap (retries, then fallback)
//	python_analyze       the findings, or an analysis without Python
//	report_generator     Markdown with chart blocks, rendered as an HTML page
//
// The data sources are the SQL agent's (package apps/internal/sources), so both
// agents see the same databases. Knowledge lives on Loom's database per
// API key and source (package knowledge), recall is hybrid (package
// recall), Python runs in package sandbox and reports are drawn by package
// report.
//
// Without a model the recall still runs: a question that matches a stored
// question → SQL example runs that SQL and reports the result, saying so;
// any other question is told which variables configure a model.
package dataagent
