//go:build race

package server_test

// raceEnabled: the race detector is on; its shadow memory makes RSS
// figures meaningless.
const raceEnabled = true
