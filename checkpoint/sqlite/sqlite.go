// Package sqlite provides a checkpoint.Saver that keeps checkpoints in a
// SQLite database file, through the pure-Go driver modernc.org/sqlite.
//
// The file is in WAL mode with synchronous=NORMAL: a Put is durable against
// a crash of the process, and against a power cut up to the last WAL
// checkpoint. Several savers, in one process or several, may open the same
// file; compare-and-set holds across all of them.
//
// A checkpoint's state is stored as a delta against its parent's state when
// the saver has the parent's state at hand (see stored.DeltaCache), so
// a step that appends a message to a long conversation stores about the
// size of the message. Wrapped in checkpoint.Sealed, the saver makes its
// deltas in the clear and seals each state or delta it stores (see
// SealBlobs).
package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/loomkit/loom/checkpoint"
	"github.com/loomkit/loom/checkpoint/internal/stored"
	"github.com/loomkit/loom/seal"
	_ "modernc.org/sqlite" // the driver, registered as "sqlite"
)

// schemaVersion is stored in PRAGMA user_version.
const schemaVersion = 3

// The table holds one row per checkpoint, in the order they were written
// (n). A row's state is the full state (full = 1) or a stored.Diff delta
// against the state of the row with seq - 1; meta holds the remaining
// fields as JSON (see metaDoc).
//
// Rows go in at the table's end, whatever their thread: the puts of many
// threads that one group commit writes share a few pages there, where a
// table kept in thread order has each of them write a page of its own
// (a WAL frame of 4 KiB, and two system calls, for a row of a few hundred
// bytes). checkpoints_thread finds a thread's rows in order, and a row
// of a thread by id from the index alone. It is the table's only index,
// so a put alone in its commit writes two pages: the table's last and
// the thread's page of the index (an index of ids cost a third). No
// unique index refuses a second row at a seq: insertSQL's
// compare-and-set does.
const schema = `
CREATE TABLE IF NOT EXISTS checkpoints (
	n         INTEGER PRIMARY KEY,
	thread    TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	id        TEXT    NOT NULL,
	parent_id TEXT    NOT NULL,
	step      INTEGER NOT NULL,
	full      INTEGER NOT NULL,
	state     BLOB    NOT NULL,
	meta      BLOB    NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS checkpoints_thread ON checkpoints (thread, seq, id);
`

// migrateV2 replaces the indexes of schema version 2: a unique one of
// thread and seq, and one of ids.
const migrateV2 = `
DROP INDEX IF EXISTS checkpoints_seq;
DROP INDEX IF EXISTS checkpoints_id;
` + schema

// migrateV1 moves the rows of a file made before schema version 2, whose
// table was kept in thread order (primary key thread, seq, with a unique
// index of thread and id), into the table above, thread by thread.
const migrateV1 = `
ALTER TABLE checkpoints RENAME TO checkpoints_v1;
DROP INDEX IF EXISTS checkpoints_id;
DROP INDEX IF EXISTS checkpoints_full;
` + schema + `
INSERT INTO checkpoints (thread, seq, id, parent_id, step, full, state, meta)
SELECT thread, seq, id, parent_id, step, full, state, meta FROM checkpoints_v1 ORDER BY thread, seq;
DROP TABLE checkpoints_v1;
`

// insertSQL is the compare-and-set: the row goes in only when it starts a
// thread that has no rows, or when its parent is the row at seq - 1 and
// no row is at seq yet (history has no gaps, so the parent is then the
// head). Both are read from checkpoints_thread alone. No other put comes
// between the check and the insert: SQLite writes one transaction at a
// time, across connections and processes, and refuses to write from a
// read older than another's commit (SQLITE_BUSY_SNAPSHOT).
const insertSQL = `
INSERT INTO checkpoints (thread, seq, id, parent_id, step, full, state, meta)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
WHERE (?4 = '' AND ?2 = 0 AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?1))
   OR (?4 <> '' AND EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?1 AND seq = ?2 - 1 AND id = ?4)
                AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE thread = ?1 AND seq = ?2))`

// The read queries return the rows from the last full state at or before
// the oldest wanted checkpoint up to the newest, oldest first; the last
// column says whether the row is wanted or only needed to rebuild a state.
const (
	headSQL = `
SELECT seq, id, parent_id, step, full, state, meta,
       seq = (SELECT max(seq) FROM checkpoints WHERE thread = ?1)
FROM checkpoints
WHERE thread = ?1
  AND seq >= coalesce((SELECT max(seq) FROM checkpoints WHERE thread = ?1 AND full = 1), 0)
ORDER BY seq`

	byIDSQL = `
SELECT seq, id, parent_id, step, full, state, meta, id = ?2
FROM checkpoints
WHERE thread = ?1
  AND seq <= (SELECT seq FROM checkpoints WHERE thread = ?1 AND id = ?2)
  AND seq >= coalesce((SELECT max(seq) FROM checkpoints WHERE thread = ?1 AND full = 1
                       AND seq <= (SELECT seq FROM checkpoints WHERE thread = ?1 AND id = ?2)), 0)
ORDER BY seq`

	listAllSQL = `
SELECT seq, id, parent_id, step, full, state, meta, 1
FROM checkpoints
WHERE thread = ?1
ORDER BY seq`

	// ?2 is the limit, > 0: rows from seq head - limit + 1 on are wanted.
	listLastSQL = `
SELECT seq, id, parent_id, step, full, state, meta,
       seq > (SELECT max(seq) FROM checkpoints WHERE thread = ?1) - ?2
FROM checkpoints
WHERE thread = ?1
  AND seq >= coalesce((SELECT max(seq) FROM checkpoints WHERE thread = ?1 AND full = 1
                       AND seq <= (SELECT max(seq) FROM checkpoints WHERE thread = ?1) - ?2 + 1), 0)
ORDER BY seq`

	// headRowSQL reads a thread's newest row alone, which is all a read
	// of the head needs when its state is full or cached (see Get).
	headRowSQL = `
SELECT seq, id, parent_id, step, full, state, meta, 1
FROM checkpoints
WHERE thread = ?1
ORDER BY seq DESC
LIMIT 1`

	deleteSQL = `DELETE FROM checkpoints WHERE thread = ?1`
)

// Saver is a checkpoint.Saver over a SQLite file. It is safe for
// concurrent use. Writes from one Saver go through one connection, in turn;
// reads use a pool of connections and run in parallel with writes.
//
// Put and Get give up on a context that is already done, but once their
// one statement runs they finish it: it takes microseconds, or up to the
// 5 s busy timeout while another process holds the write lock. (Handing
// the context to the driver would cost more than the statement itself.)
// List and DeleteThread, whose work grows with the thread, stop when the
// context is done.
type Saver struct {
	db *sql.DB

	qmu     sync.Mutex // guards queue and leading
	queue   []*writeOp // writes waiting for the next group commit
	leading bool       // a writer is committing the queue (see lead)

	wmu    sync.Mutex // serialises writes; guards the fields below
	wconn  *sql.Conn  // keeps its statements prepared (see cachingConn)
	closed bool

	head, headRow, byID, listAll, listLast *sql.Stmt

	cache stored.DeltaCache
	codec seal.Codec // seals the states and deltas stored (see SealBlobs)

	path    string        // the database file; its WAL is path + "-wal"
	commits atomic.Int64  // commits since the last WAL checkpoint
	looked  int           // commits since the writer last looked at the WAL's size (under the write lock)
	ckmu    sync.Mutex    // one WAL checkpoint at a time; taken after wmu
	kick    chan struct{} // wakes the checkpointer
	stalled atomic.Bool   // tests: the checkpointer is never woken
	done    chan struct{} // closed when the checkpointer has stopped
}

// checkpointEvery is how many commits go between WAL checkpoints (about
// what SQLite's default of 1,000 WAL pages amounts to for small puts).
const checkpointEvery = 500

// walCap is the WAL size, in pages, past which the checkpointer makes
// the writes wait for a checkpoint that lets the WAL start over. A WAL
// starts over only when a write begins with every frame already copied,
// and under steady writes one always lands while the background copy
// runs, so without that pause the WAL would grow for ever.
const walCap = 4000

// checkpointer copies the WAL into the database file in the background
// whenever enough commits have gathered, until the saver closes. The copy
// is PASSIVE: it blocks neither readers nor the writer, so no commit waits
// for its fsync. When the WAL has passed walCap without starting over, it
// holds the writes back for a second PASSIVE copy, of only the frames
// written meanwhile, after which the next write starts the WAL over. That
// pause is two fsyncs (about 10 ms on a cloud disk) once every thousand or
// so commits; it never waits for readers and never truncates the file,
// which stays at about walCap pages and is reused.
func (s *Saver) checkpointer() {
	defer close(s.done)
	ctx := context.Background()
	var lastSeq uint32
	for range s.kick {
		s.commits.Store(0)
		var busy, log, done int
		s.ckmu.Lock()
		err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &log, &done)
		s.ckmu.Unlock()
		if err != nil {
			slog.Debug("checkpoint sqlite: WAL checkpoint", "err", err)
			continue
		}
		// Starting over bumps the sequence number in the WAL's header.
		seq := s.walSequence()
		if restarted := seq != lastSeq; log < walCap || restarted {
			lastSeq = seq
			continue
		}
		s.wmu.Lock()
		s.ckmu.Lock()
		if !s.closed {
			if _, err := s.wconn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
				slog.Debug("checkpoint sqlite: WAL checkpoint with writes held", "err", err)
			}
		}
		s.ckmu.Unlock()
		s.wmu.Unlock()
	}
}

// walSequence reads the checkpoint sequence number from the WAL file's
// header (big-endian at byte 12), which SQLite increments each time the
// WAL starts over from its beginning; 0 when there is no WAL to read.
func (s *Saver) walSequence() uint32 {
	f, err := os.Open(s.path + "-wal")
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], 12); err != nil {
		return 0
	}
	return binary.BigEndian.Uint32(b[:])
}

// walFrames returns how many frames the WAL holds now (since it last
// started over), read from the header of the WAL index in the
// shared-memory file (mxFrame, a native-endian uint32 at byte 16), which
// every connection to the database maps; 0 when there is none to read.
// The read takes no lock, so it may see a header being rewritten: it
// only decides when to look closer, and the next look reads it again.
func (s *Saver) walFrames() uint32 {
	f, err := os.Open(s.path + "-shm")
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], 16); err != nil {
		return 0
	}
	return binary.NativeEndian.Uint32(b[:])
}

// walHardCap is the WAL size, in bytes, that the writer itself enforces:
// past it (the checkpointer fell behind, say on a busy machine) the
// writer that notices copies the WAL back before anyone writes again, so
// the WAL stays within about this size, whatever the load.
const walHardCap = 2 * walCap * 4096

// walCheckEvery is how many commits go between the writer's looks at the
// WAL's size; each adds a few pages, so the WAL passes walHardCap by at
// most about a megabyte.
const walCheckEvery = 32

// committed counts a commit and wakes the checkpointer when due. It is
// called with the write lock held: when the WAL has passed walHardCap,
// writes wait here for a checkpoint.
func (s *Saver) committed() {
	if s.commits.Add(1) == checkpointEvery && !s.stalled.Load() {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	// The checkpointer resets commits whenever it runs: the writer keeps
	// its own count, so that it looks every walCheckEvery commits
	// whatever the checkpointer does.
	if s.looked++; s.looked < walCheckEvery {
		return
	}
	s.looked = 0
	// What counts is the frames in use, not the file's size: the file
	// stays at its high-water mark when the WAL starts over, and a writer
	// that went by the size would checkpoint, fsync included, at every
	// look for ever once the WAL had reached the cap a first time.
	frames := s.walFrames()
	if frames < walCap {
		return
	}
	if !s.stalled.Load() {
		select {
		case s.kick <- struct{}{}: // copy now, before the hard cap
		default:
		}
	}
	if frames < walHardCap/4096 {
		return
	}
	// RESTART copies every frame and then waits (busy_timeout) until no
	// reader uses the WAL, so the next write starts it over from its
	// beginning. A PASSIVE copy alone would leave that to chance: with a
	// reader on the WAL at the next write (the checkpointer's own copy,
	// say), the WAL grows on past the cap. It waits for a copy the
	// checkpointer is making, which would make it fail at once (busy).
	s.ckmu.Lock()
	defer s.ckmu.Unlock()
	if _, err := s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(RESTART)"); err != nil {
		slog.Debug("checkpoint sqlite: WAL checkpoint at the hard cap", "err", err)
	}
}

var _ checkpoint.BlobSealer = (*Saver)(nil)

// SealBlobs makes the saver seal every state and delta it stores with c,
// and open each one it reads (those stored in the clear are read as they
// are); checkpoint.Sealed calls it. Call it once, before the saver is
// used.
func (s *Saver) SealBlobs(c seal.Codec) { s.codec = c }

// Open opens the SQLite database at path, creating the file and its table
// when they do not exist. Close the Saver when done with it.
func Open(ctx context.Context, path string) (*Saver, error) {
	if path == "" || strings.ContainsAny(path, "?") {
		return nil, fmt.Errorf("checkpoint sqlite open %q: path must be a file name without '?'", path)
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("checkpoint sqlite open %s: %w", path, err)
	}
	// Commits never checkpoint the WAL themselves (wal_autocheckpoint 0):
	// the checkpointer goroutine does, off the commit path, so no write
	// waits for the checkpoint's fsync.
	dsn := path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
	conns, err := newConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("checkpoint sqlite open %s: %w", path, err)
	}
	db := sql.OpenDB(conns)
	readers := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(readers + 1) // + the write connection
	db.SetMaxIdleConns(readers + 1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	s := &Saver{db: db, path: path, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.checkpointer()
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("checkpoint sqlite open %s: %w", path, err)
	}
	return s, nil
}

// createPrivate creates the database file, empty and readable by its
// owner only (0600), when it does not exist: it holds every thread of
// every user. SQLite gives the WAL and shared-memory files it makes
// beside it the same permissions. An existing file keeps its own.
func createPrivate(path string) error {
	if path == ":memory:" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	return nil
}

func (s *Saver) init(ctx context.Context) (err error) {
	if s.wconn, err = s.db.Conn(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	prep := func(p **sql.Stmt, q string) {
		if err == nil {
			*p, err = s.db.PrepareContext(ctx, q)
		}
	}
	prep(&s.head, headSQL)
	prep(&s.headRow, headRowSQL)
	prep(&s.byID, byIDSQL)
	prep(&s.listAll, listAllSQL)
	prep(&s.listLast, listLastSQL)
	return err
}

// migrate creates the schema in one transaction, so savers opening a new
// file at once do not trip over each other.
func (s *Saver) migrate(ctx context.Context) error {
	tx, err := s.wconn.BeginTx(ctx, nil) // BEGIN IMMEDIATE, see _txlock
	if err != nil {
		return fmt.Errorf("begin schema: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch v {
	case schemaVersion:
		return nil
	case 0, 1, 2:
		ddl := [...]string{schema, migrateV1, migrateV2}[v]
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("create schema version %d from %d: %w", schemaVersion, v, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
	default:
		return fmt.Errorf("schema version %d, want %d", v, schemaVersion)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit schema: %w", err)
	}
	return nil
}

// Close closes the database. The Saver must not be used afterwards.
func (s *Saver) Close() error {
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return nil
	}
	s.closed = true
	close(s.kick)
	// The checkpointer may be waiting for the write lock to copy once
	// more: it gets it, finds the saver closed, and stops. Writers that
	// get it now find the saver closed too.
	s.wmu.Unlock()
	<-s.done
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var errs []error
	for _, st := range []*sql.Stmt{s.head, s.headRow, s.byID, s.listAll, s.listLast} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Close())
	}
	errs = append(errs, s.db.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint sqlite close: %w", err)
	}
	return nil
}

var errClosed = errors.New("saver closed")

// Put implements checkpoint.Saver.
func (s *Saver) Put(ctx context.Context, cp *checkpoint.Checkpoint) error {
	if cp.ID == "" {
		return fmt.Errorf("checkpoint put %s: empty checkpoint id", cp.Thread)
	}
	meta, err := stored.EncodeMeta(cp)
	if err != nil {
		return fmt.Errorf("checkpoint put %s/%s: encode meta: %w", cp.Thread, cp.ID, err)
	}
	state := cp.State
	if state == nil {
		state = []byte{}
	}
	blob, delta, chain := s.cache.Encode(cp.Thread, cp.ParentID, state)
	if blob, err = stored.SealBlob(s.codec, blob); err != nil {
		return fmt.Errorf("checkpoint put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	full := int64(1)
	if delta {
		full = 0
	}
	op := &writeOp{cp: cp}
	for i, v := range [...]any{cp.Thread, cp.Seq, cp.ID, cp.ParentID, int64(cp.Step), full, blob, meta} {
		op.args[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	if err := s.enqueue(op); err != nil {
		return err
	}
	// A copy: the caller may reuse cp.State, and the cache must keep
	// exactly what the next delta is made against.
	s.cache.Remember(cp.Thread, cp.ID, bytes.Clone(state), chain)
	return nil
}

// writeOp is a write waiting for its group commit: a checkpoint put (cp
// and the insert's args, as the driver takes them), or a function run in
// the transaction.
type writeOp struct {
	cp   *checkpoint.Checkpoint
	args [8]driver.NamedValue
	ctx  context.Context
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error // where a writer that waits for the leader gets its result
	err  error      // the leader's own result (done is nil)
}

// finish hands op its result.
func (op *writeOp) finish(err error) {
	if op.done == nil {
		op.err = err
		return
	}
	op.done <- err
}

// DB returns the saver's database, for reading what else lives in the
// same file (an app's tables). Write to it with Write.
func (s *Saver) DB() *sql.DB { return s.db }

// Write runs fn in a transaction on the saver's write connection, in the
// same group commit as the checkpoints being written: writes of this
// process never wait for each other in SQLite's busy handler. fn's changes
// are undone when it returns an error, which Write returns; fn must not
// commit or roll back tx. Once fn runs, its statements run to their end
// whatever becomes of ctx (see Put): ctx's end stops a write only before
// fn starts.
func (s *Saver) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint sqlite write: %w", err)
	}
	return s.enqueue(&writeOp{ctx: ctx, fn: fn})
}

// enqueue commits op, or queues it for the leader's next batch, and
// returns op's result (group commit): one writer at a time, the leader,
// commits, so writes that arrive while one commit runs go together in
// the next, in one transaction, and the others only wait for their
// result. A writer that finds no leader becomes it: it commits its own
// write at once, with no queue or channel in its way, and hands what
// queued meanwhile to a goroutine of its own (lead), so no caller waits
// for others' writes beyond its batch; the writes that queue while there
// is a leader never contend for the write lock.
func (s *Saver) enqueue(op *writeOp) error {
	s.qmu.Lock()
	if s.leading {
		op.done = make(chan error, 1)
		s.queue = append(s.queue, op)
		s.qmu.Unlock()
		return <-op.done
	}
	s.leading = true // the queue is empty while no one leads
	s.qmu.Unlock()
	s.commit([]*writeOp{op})
	s.qmu.Lock()
	more := len(s.queue) > 0
	s.leading = more
	s.qmu.Unlock()
	if more {
		go s.lead()
	}
	return op.err
}

// lead commits the queue, batch after batch, until it is empty.
func (s *Saver) lead() {
	for {
		s.qmu.Lock()
		batch := s.queue
		s.queue = nil
		if len(batch) == 0 {
			s.leading = false
			s.qmu.Unlock()
			return
		}
		s.qmu.Unlock()
		s.commit(batch)
	}
}

// commit writes batch in one transaction. A put's own conflict fails
// only that put, as SQLite undoes just the failed statement; a function's
// failure is undone to its savepoint.
func (s *Saver) commit(batch []*writeOp) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	failAll := func(what string, err error) {
		for _, op := range batch {
			op.finish(fmt.Errorf("checkpoint sqlite %s: %w", what, err))
		}
	}
	if s.closed {
		failAll("write", errClosed)
		return
	}
	ctx := context.Background()
	if len(batch) == 1 && batch[0].fn == nil {
		err := s.insert(ctx, batch[0])
		s.committed()
		batch[0].finish(err)
		return
	}
	tx, err := s.wconn.BeginTx(ctx, nil)
	if err != nil {
		failAll("begin", err)
		return
	}
	if len(batch) == 1 {
		// One function alone needs no savepoint: its failure undoes
		// the whole transaction.
		op := batch[0]
		err := runFn(op.ctx, tx, op.fn)
		if err != nil {
			if rerr := tx.Rollback(); rerr != nil {
				err = errors.Join(err, fmt.Errorf("checkpoint sqlite write: roll back: %w", rerr))
			}
		} else if err = tx.Commit(); err != nil {
			err = fmt.Errorf("checkpoint sqlite commit: %w", err)
		} else {
			s.committed()
		}
		op.finish(err)
		return
	}
	results := make([]error, len(batch))
	for i, op := range batch {
		if op.fn == nil {
			results[i] = s.insert(ctx, op)
			continue
		}
		results[i] = runInSavepoint(op.ctx, tx, op.fn)
	}
	if err := tx.Commit(); err != nil {
		failAll("commit", err)
		return
	}
	s.committed()
	for i, op := range batch {
		op.finish(results[i])
	}
}

// insert runs op's checkpoint insert on the write connection, in the
// transaction open on it if there is one. The arguments go to the
// driver as they are, past database/sql's conversion of each, to the
// statement the connection keeps prepared (see cachingConn).
func (s *Saver) insert(ctx context.Context, op *writeOp) error {
	var res driver.Result
	err := s.wconn.Raw(func(dc any) error {
		var err error
		res, err = dc.(driver.ExecerContext).ExecContext(ctx, insertSQL, op.args[:])
		return err
	})
	return putResult(op.cp, res, err)
}

// runFn runs a Write's function in tx, unless its context is done. The
// function's statements run with the context's values but not its end:
// a statement takes microseconds under the write lock, and handing a
// context that can end to the driver starts a goroutine to watch it for
// each statement, which costs more.
func runFn(ctx context.Context, tx *sql.Tx, fn func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint sqlite write: %w", err)
	}
	return fn(context.WithoutCancel(ctx), tx)
}

func runInSavepoint(ctx context.Context, tx *sql.Tx, fn func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint sqlite write: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	if _, err := tx.ExecContext(ctx, "SAVEPOINT loom_write"); err != nil {
		return fmt.Errorf("checkpoint sqlite write: savepoint: %w", err)
	}
	err := fn(ctx, tx)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO loom_write"); rerr != nil {
			err = errors.Join(err, fmt.Errorf("checkpoint sqlite write: roll back: %w", rerr))
		}
	}
	if _, rerr := tx.ExecContext(ctx, "RELEASE loom_write"); rerr != nil {
		err = errors.Join(err, fmt.Errorf("checkpoint sqlite write: release: %w", rerr))
	}
	return err
}

// putResult turns the outcome of one insert into Put's error.
func putResult(cp *checkpoint.Checkpoint, res driver.Result, err error) error {
	if err != nil {
		return fmt.Errorf("checkpoint put %s/%s: %w", cp.Thread, cp.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("checkpoint put %s/%s: %w", cp.Thread, cp.ID, err)
	} else if n == 0 {
		return fmt.Errorf("checkpoint put %s/%s (parent %q, seq %d): %w", cp.Thread, cp.ID, cp.ParentID, cp.Seq, checkpoint.ErrConflict)
	}
	return nil
}

// Get implements checkpoint.Saver.
func (s *Saver) Get(ctx context.Context, thread, id string) (*checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint get %s/%s: %w", thread, id, err)
	}
	var rows *sql.Rows
	var err error
	if id == "" {
		if cp, err := s.cachedHead(ctx, thread); cp != nil || err != nil {
			return cp, err
		}
		rows, err = s.head.QueryContext(context.WithoutCancel(ctx), thread)
	} else {
		rows, err = s.byID.QueryContext(context.WithoutCancel(ctx), thread, id)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint get %s/%s: %w", thread, id, err)
	}
	r, err := s.resolveRows(thread, rows)
	if err != nil {
		return nil, fmt.Errorf("checkpoint get %s/%s: %w", thread, id, err)
	}
	cp := r.Last(&s.cache, id == "")
	if cp == nil {
		return nil, fmt.Errorf("checkpoint get %s/%s: %w", thread, id, checkpoint.ErrNotFound)
	}
	return cp, nil
}

// cachedHead reads thread's head from its row alone, when the row holds
// its full state or the delta cache holds the state it makes: a put
// remembers what it wrote, so the head that a run reads back on its
// thread's next turn is nearly always at hand, and its read skips the
// rows back to the last full state and their deltas. It returns nil and
// no error when the rows before the head are needed.
func (s *Saver) cachedHead(ctx context.Context, thread string) (*checkpoint.Checkpoint, error) {
	rows, err := s.headRow.QueryContext(context.WithoutCancel(ctx), thread)
	if err != nil {
		return nil, fmt.Errorf("checkpoint get %s: %w", thread, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("checkpoint get %s: %w", thread, err)
		}
		return nil, fmt.Errorf("checkpoint get %s: %w", thread, checkpoint.ErrNotFound)
	}
	rw, err := scanRow(rows)
	if err != nil {
		return nil, fmt.Errorf("checkpoint get %s: %w", thread, err)
	}
	cached := !rw.Full
	if cached {
		var ok bool
		if rw.State, ok = s.cache.Cached(thread, rw.ID); !ok {
			return nil, nil
		}
		rw.Full = true // as far as the resolver goes: the state is whole
	}
	r := &stored.Resolver{Thread: thread, Codec: s.codec}
	if err := r.Add(&rw); err != nil {
		return nil, fmt.Errorf("checkpoint get %s: %w", thread, err)
	}
	if cached {
		return r.Out[0], nil // the cache holds this checkpoint's state already
	}
	return r.Last(&s.cache, true), nil
}

// List implements checkpoint.Saver.
func (s *Saver) List(ctx context.Context, thread string, limit int) ([]*checkpoint.Checkpoint, error) {
	var rows *sql.Rows
	var err error
	if limit > 0 {
		rows, err = s.listLast.QueryContext(ctx, thread, int64(limit))
	} else {
		rows, err = s.listAll.QueryContext(ctx, thread)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint list %s: %w", thread, err)
	}
	r, err := s.resolveRows(thread, rows)
	if err != nil {
		return nil, fmt.Errorf("checkpoint list %s: %w", thread, err)
	}
	return r.NewestFirst(&s.cache), nil
}

// DeleteThread implements checkpoint.Saver.
func (s *Saver) DeleteThread(ctx context.Context, thread string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return fmt.Errorf("checkpoint delete %s: %w", thread, errClosed)
	}
	if _, err := s.wconn.ExecContext(ctx, deleteSQL, thread); err != nil {
		return fmt.Errorf("checkpoint delete %s: %w", thread, err)
	}
	s.cache.Forget(thread)
	return nil
}

// TrimHistory deletes the checkpoints of thread older than its newest
// keep (at least 1) and returns how many it deleted. The oldest kept gets
// its full state, so that reading it needs no row before it. Puts only
// append, so it is safe beside a run that goes on on the thread.
func (s *Saver) TrimHistory(ctx context.Context, thread string, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("checkpoint trim %s: keep %d checkpoints, want at least 1", thread, keep)
	}
	kept, err := s.List(ctx, thread, keep)
	if err != nil || len(kept) < keep {
		return 0, err
	}
	oldest := kept[len(kept)-1]
	full, err := stored.SealBlob(s.codec, oldest.State)
	if err != nil {
		return 0, fmt.Errorf("checkpoint trim %s: %w", thread, err)
	}
	var n int64
	err = s.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var lo sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT min(seq) FROM checkpoints WHERE thread = ?`, thread).Scan(&lo); err != nil {
			return err
		}
		if !lo.Valid || lo.Int64 >= oldest.Seq {
			return nil // nothing older, or the thread is gone
		}
		if _, err := tx.ExecContext(ctx, `UPDATE checkpoints SET full = 1, state = ? WHERE thread = ? AND seq = ? AND id = ?`,
			full, thread, oldest.Seq, oldest.ID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE thread = ? AND seq < ?`, thread, oldest.Seq)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint trim %s: %w", thread, err)
	}
	return int(n), nil
}

// resolveRows feeds the rows of a read query to a resolver.
func (s *Saver) resolveRows(thread string, rows *sql.Rows) (*stored.Resolver, error) {
	defer rows.Close()
	r := &stored.Resolver{Thread: thread, Codec: s.codec}
	for rows.Next() {
		rw, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("read row after seq %d: %w", r.LastSeq(), err)
		}
		if err := r.Add(&rw); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// scanRow reads the row rows is at, as the read queries return it; its
// State and Meta point into the driver's buffers until the next row.
func scanRow(rows *sql.Rows) (stored.Row, error) {
	var rw stored.Row
	var full, keep int64
	if err := rows.Scan(&rw.Seq, &rw.ID, &rw.Parent, &rw.Step, &full, (*sql.RawBytes)(&rw.State), (*sql.RawBytes)(&rw.Meta), &keep); err != nil {
		return rw, fmt.Errorf("%w: %w", checkpoint.ErrCorrupt, err)
	}
	rw.Full, rw.Keep = full != 0, keep != 0
	return rw, nil
}
