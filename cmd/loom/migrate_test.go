package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/loomkit/loom/store/storetest"
)

// `loom migrate` brings a new database up to date, says so, and finds
// nothing to do the second time; on Postgres the job queue's tables too.
func TestMigrate(t *testing.T) {
	for _, c := range []struct {
		name string
		db   func(t *testing.T) string
		want string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "m.db") }, `^sqlite .*m\.db is up to date: .*cabin \d+, .*schedule 1, server \d+(, [a-z/]+ \d+)*\n$`},
		{"postgres", func(t *testing.T) string { return storetest.PostgresURL(t) }, `^postgres \S+ is up to date: .*cabin \d+, checkpoint 1, .*river \d+, schedule 1, server \d+(, [a-z/]+ \d+)*\n$`},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := c.db(t)
			for range 2 {
				var out bytes.Buffer
				if err := run(context.Background(), []string{"migrate", "--db", db}, &out); err != nil {
					t.Fatal(err)
				}
				if !regexp.MustCompile(c.want).MatchString(out.String()) {
					t.Fatalf("output %q, want %s", out.String(), c.want)
				}
			}
		})
	}
	if err := run(context.Background(), []string{"migrate", "--db", "mysql://x"}, &bytes.Buffer{}); err == nil {
		t.Fatal("migrate of a mysql URL: no error")
	}
}
