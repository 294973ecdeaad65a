package sqlite

// WALSequence exposes walSequence to the package's external tests.
func WALSequence(s *Saver) uint32 { return s.walSequence() }
