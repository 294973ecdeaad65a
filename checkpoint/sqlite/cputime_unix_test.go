//go:build unix

package sqlite_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine a steadier measure of work than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
