// Package faults tests Loom's server and savers under faults: replicas of
// `loom serve` on Postgres killed mid-run and restarted, PostgreSQL
// restarted under load, Redis restarted under a checkpoint saver. It has
// no code of its own; see its tests.
//
// The tests restart the shared PostgreSQL and Redis servers, so they run
// only when LOOM_TEST_FAULTS=1 or CI=true, and only against the local
// servers (127.0.0.1:5432 and :6379, restarted with pg_ctlcluster and
// redis-server), and on their own: after the other packages, one package
// at a time (.ci/run runs them as a step of their own):
//
//	LOOM_TEST_FAULTS=1 go test -p 1 -v ./server/faults/
package faults
