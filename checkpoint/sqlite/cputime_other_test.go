//go:build !unix

package sqlite_test

import "time"

func cpuTime() time.Duration { return 0 }
