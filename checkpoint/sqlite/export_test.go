package sqlite

// WALSequence exposes walSequence to the package's external tests.
func WALSequence(s *Saver) uint32 { return s.walSequence() }

// StallCheckpointer stops waking the background checkpointer, as if it
// could not keep up: only the writers' own bound keeps the WAL in check.
func StallCheckpointer(s *Saver) { s.stalled.Store(true) }

// WALFrames exposes walFrames to the package's external tests.
func WALFrames(s *Saver) uint32 { return s.walFrames() }

// Queries are the saver's statements, by name, for the package's
// external tests.
var Queries = map[string]string{
	"insert": insertSQL, "head": headSQL, "byID": byIDSQL, "listAll": listAllSQL,
	"listLast": listLastSQL, "headRow": headRowSQL, "delete": deleteSQL,
}
