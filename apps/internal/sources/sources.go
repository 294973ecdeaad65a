// Package sources gives the apps that answer questions on databases (the
// SQL explorer and the analyst) the same data sources: the configured
// ones, else the demo shop, never the server's own database.
package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/loomkit/loom/datasource"
	"github.com/loomkit/loom/datasource/shop"
	"github.com/loomkit/loom/store"
)

// Options say where an app's data sources come from.
type Options struct {
	// Sources are the databases; nil reads them from File.
	Sources []datasource.Config
	// File is a YAML or JSON file of the sources (datasource.ReadConfigs);
	// without one the sources are the demo shop at DemoPath.
	File string
	// DemoPath is where the demo shop is written on first start (default
	// shop.File in the working directory).
	DemoPath string
	// Logger receives what happened to the demo shop.
	Logger *slog.Logger
}

// Configs returns the data sources o configures: o.Sources, else those of
// o.File, else the demo shop (written on first start at o.DemoPath; when
// it cannot be written, the source is there but unavailable, and the log
// says why).
func Configs(ctx context.Context, o Options) ([]datasource.Config, error) {
	if o.Sources != nil {
		return o.Sources, nil
	}
	if o.File != "" {
		return datasource.ReadConfigs(o.File)
	}
	log := cmp.Or(o.Logger, slog.Default())
	path := cmp.Or(o.DemoPath, shop.File)
	made, err := shop.Ensure(ctx, path)
	if err != nil {
		// Like any source that cannot be reached, it does not stop the
		// server: a question on it says it is unavailable.
		log.Warn("could not write the demo shop database; it is unavailable", "path", path, "err", err)
	}
	if made {
		log.Info("wrote the demo shop database", "path", path)
	}
	return []datasource.Config{shop.Config(path)}, nil
}

// RefuseOwn returns an error when a source of cfgs is the server's own
// database db (the same SQLite file, or the same server and database):
// through it any API key would read every key's threads. It opens
// nothing.
func RefuseOwn(db *store.DB, cfgs []datasource.Config) error {
	own, ok := ownIdentity(db)
	if !ok {
		return nil
	}
	for _, c := range cfgs {
		d, id, err := datasource.Identity(c.URL)
		if err != nil {
			continue // Dial says what is wrong with it
		}
		same := string(d)+" "+id == own.id
		if !same && d == datasource.SQLite && own.file != "" {
			same = sameFile(own.file, id)
		}
		if same {
			return fmt.Errorf("data source %s is Loom's own database: through it any API key could read every key's threads; give the agents another database", c.Name)
		}
	}
	return nil
}

// identity is what names a database for RefuseOwn.
type identity struct {
	id   string // dialect and datasource.Identity
	file string // SQLite: the file
}

// ownIdentity names the server's database db.
func ownIdentity(db *store.DB) (identity, bool) {
	if db == nil {
		return identity{}, false
	}
	switch db.Dialect() {
	case store.SQLite:
		path := db.Path()
		return identity{id: string(datasource.SQLite) + " " + datasource.FileIdentity(path), file: path}, true
	case store.Postgres:
		// String is "postgres HOST:PORT/DATABASE", as
		// datasource.Identity writes it.
		_, where, _ := strings.Cut(db.String(), " ")
		_, id, err := datasource.Identity("postgres://" + where)
		if err != nil {
			return identity{}, false
		}
		return identity{id: string(datasource.Postgres) + " " + id}, true
	}
	return identity{}, false
}

// sameFile reports whether the files a and b are one (a hard link, say).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// Ready says whether every source of list answers now: nil, or one line
// per source that does not ("source sales is unavailable: connection
// refused"), without hosts or credentials. source gives an item's name
// and source.
func Ready[S any](ctx context.Context, list []S, source func(S) (string, *datasource.Source)) error {
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, s := range list {
		wg.Go(func() {
			name, src := source(s)
			err := src.Ping(ctx)
			switch {
			case err == nil:
			case errors.Is(err, datasource.ErrUnavailable):
				errs[i] = datasource.Unavailable(name, err)
			default: // the check's own deadline
				errs[i] = datasource.NotAnswering(name)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
