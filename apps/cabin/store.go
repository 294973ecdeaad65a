package cabin

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// VehicleStore keeps the simulated vehicles' state.
type VehicleStore interface {
	// Vehicle returns vehicle id; one never changed has the default state.
	Vehicle(ctx context.Context, id string) (Vehicle, error)
	// UpdateVehicle changes vehicle id with fn, atomically, and returns
	// the new state; an error from fn changes nothing.
	UpdateVehicle(ctx context.Context, id string, fn func(*Vehicle) error) (Vehicle, error)
}

// OrderStore keeps the simulated order service's orders and hand-offs.
type OrderStore interface {
	// Order returns order id, or an error wrapping ErrNotFound.
	Order(ctx context.Context, id string) (Order, error)
	// Orders returns user's orders ("" for everyone's), by id.
	Orders(ctx context.Context, user string) ([]Order, error)
	// UpdateOrder changes order id with fn, atomically.
	UpdateOrder(ctx context.Context, id string, fn func(*Order) error) (Order, error)
	// AddHandoff records a hand-off to a person and returns it numbered.
	AddHandoff(ctx context.Context, h Handoff) (Handoff, error)
	// Handoffs returns the hand-offs, oldest first.
	Handoffs(ctx context.Context) ([]Handoff, error)
}

// Store keeps everything the simulated backends own. SQLStore keeps it in
// Loom's SQLite file; MemoryStore in memory. Another shared store (say
// Postgres, for several replicas) is another implementation.
type Store interface {
	VehicleStore
	OrderStore
}

// ErrNotFound is wrapped by store errors for a missing order.
var ErrNotFound = errors.New("cabin: not found")

// SQLDB is what SQLStore needs of a database: a handle to read and a
// write that runs in one transaction. checkpoint/sqlite's Saver is one, so
// the tables live in the same file as the sessions.
type SQLDB interface {
	DB() *sql.DB
	Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error
}

// SQLStore is a Store in SQL tables (cabin_vehicles, cabin_orders,
// cabin_handoffs) of a SQLite database.
type SQLStore struct {
	db SQLDB
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS cabin_vehicles (
	id TEXT PRIMARY KEY,
	state TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cabin_orders (
	id TEXT PRIMARY KEY,
	user_id TEXT NOT NULL,
	status TEXT NOT NULL,
	doc TEXT NOT NULL,
	updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cabin_orders_user ON cabin_orders(user_id, id);
CREATE TABLE IF NOT EXISTS cabin_handoffs (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	doc TEXT NOT NULL,
	created_at TEXT NOT NULL
);`

// OpenSQLStore creates the tables when they do not exist and adds the
// sample orders (SampleOrders) that are not there yet.
func OpenSQLStore(ctx context.Context, db SQLDB) (*SQLStore, error) {
	s := &SQLStore{db: db}
	err := db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, schemaSQL); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
		for _, o := range SampleOrders(time.Now().UTC()) {
			doc, err := json.Marshal(o)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO cabin_orders (id, user_id, status, doc, updated_at) VALUES (?, ?, ?, ?, ?)`,
				o.ID, o.UserID, o.Status, string(doc), o.UpdatedAt.Format(time.RFC3339Nano)); err != nil {
				return fmt.Errorf("add sample order %s: %w", o.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open cabin store: %w", err)
	}
	return s, nil
}

// Vehicle implements VehicleStore.
func (s *SQLStore) Vehicle(ctx context.Context, id string) (Vehicle, error) {
	v, err := scanVehicle(ctx, s.db.DB(), id)
	if err != nil {
		return Vehicle{}, fmt.Errorf("read vehicle %s: %w", id, err)
	}
	return v, nil
}

// querier is what sql.DB and sql.Tx share for reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func scanVehicle(ctx context.Context, q querier, id string) (Vehicle, error) {
	var doc string
	err := q.QueryRowContext(ctx, `SELECT state FROM cabin_vehicles WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return NewVehicle(id), nil
	}
	if err != nil {
		return Vehicle{}, err
	}
	v := NewVehicle(id)
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return Vehicle{}, fmt.Errorf("decode: %w", err)
	}
	return v, nil
}

// UpdateVehicle implements VehicleStore.
func (s *SQLStore) UpdateVehicle(ctx context.Context, id string, fn func(*Vehicle) error) (Vehicle, error) {
	var out Vehicle
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		v, err := scanVehicle(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		v.UpdatedAt = time.Now().UTC()
		doc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO cabin_vehicles (id, state, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
			id, string(doc), v.UpdatedAt.Format(time.RFC3339Nano))
		out = v
		return err
	})
	if err != nil {
		return Vehicle{}, fmt.Errorf("update vehicle %s: %w", id, err)
	}
	return out, nil
}

func scanOrder(ctx context.Context, q querier, id string) (Order, error) {
	var doc string
	err := q.QueryRowContext(ctx, `SELECT doc FROM cabin_orders WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, ErrNotFound
	}
	if err != nil {
		return Order{}, err
	}
	var o Order
	if err := json.Unmarshal([]byte(doc), &o); err != nil {
		return Order{}, fmt.Errorf("decode: %w", err)
	}
	return o, nil
}

// Order implements OrderStore.
func (s *SQLStore) Order(ctx context.Context, id string) (Order, error) {
	o, err := scanOrder(ctx, s.db.DB(), id)
	if err != nil {
		return Order{}, fmt.Errorf("read order %s: %w", id, err)
	}
	return o, nil
}

// Orders implements OrderStore.
func (s *SQLStore) Orders(ctx context.Context, user string) ([]Order, error) {
	q, args := `SELECT doc FROM cabin_orders ORDER BY id`, []any(nil)
	if user != "" {
		q, args = `SELECT doc FROM cabin_orders WHERE user_id = ? ORDER BY id`, []any{user}
	}
	rows, err := s.db.DB().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	defer rows.Close()
	var out []Order
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("list orders: %w", err)
		}
		var o Order
		if err := json.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("list orders: decode: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return out, nil
}

// UpdateOrder implements OrderStore.
func (s *SQLStore) UpdateOrder(ctx context.Context, id string, fn func(*Order) error) (Order, error) {
	var out Order
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		o, err := scanOrder(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := fn(&o); err != nil {
			return err
		}
		o.UpdatedAt = time.Now().UTC()
		doc, err := json.Marshal(o)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE cabin_orders SET status = ?, doc = ?, updated_at = ? WHERE id = ?`,
			o.Status, string(doc), o.UpdatedAt.Format(time.RFC3339Nano), id)
		out = o
		return err
	})
	if err != nil {
		return Order{}, fmt.Errorf("update order %s: %w", id, err)
	}
	return out, nil
}

// AddHandoff implements OrderStore.
func (s *SQLStore) AddHandoff(ctx context.Context, h Handoff) (Handoff, error) {
	err := s.db.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var waiting int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cabin_handoffs`).Scan(&waiting); err != nil {
			return err
		}
		h.Queue = waiting%5 + 1
		h.Created = time.Now().UTC()
		doc, err := json.Marshal(h)
		if err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, `INSERT INTO cabin_handoffs (doc, created_at) VALUES (?, ?)`, string(doc), h.Created.Format(time.RFC3339Nano))
		if err != nil {
			return err
		}
		h.ID, err = r.LastInsertId()
		if err != nil {
			return err
		}
		doc, err = json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE cabin_handoffs SET doc = ? WHERE id = ?`, string(doc), h.ID)
		return err
	})
	if err != nil {
		return Handoff{}, fmt.Errorf("add hand-off: %w", err)
	}
	return h, nil
}

// Handoffs implements OrderStore.
func (s *SQLStore) Handoffs(ctx context.Context) ([]Handoff, error) {
	rows, err := s.db.DB().QueryContext(ctx, `SELECT doc FROM cabin_handoffs ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list hand-offs: %w", err)
	}
	defer rows.Close()
	var out []Handoff
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, fmt.Errorf("list hand-offs: %w", err)
		}
		var h Handoff
		if err := json.Unmarshal([]byte(doc), &h); err != nil {
			return nil, fmt.Errorf("list hand-offs: decode: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list hand-offs: %w", err)
	}
	return out, nil
}

// MemoryStore is a Store in memory, for tests and for running without a
// database. Its zero value is not ready; use NewMemoryStore.
type MemoryStore struct {
	mu       sync.Mutex
	vehicles map[string]Vehicle
	orders   map[string]Order
	handoffs []Handoff
}

// NewMemoryStore returns a store holding the sample orders.
func NewMemoryStore() *MemoryStore {
	m := &MemoryStore{vehicles: map[string]Vehicle{}, orders: map[string]Order{}}
	for _, o := range SampleOrders(time.Now().UTC()) {
		m.orders[o.ID] = o
	}
	return m
}

// Vehicle implements VehicleStore.
func (m *MemoryStore) Vehicle(_ context.Context, id string) (Vehicle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.vehicles[id]; ok {
		return v.clone(), nil
	}
	return NewVehicle(id), nil
}

// UpdateVehicle implements VehicleStore.
func (m *MemoryStore) UpdateVehicle(_ context.Context, id string, fn func(*Vehicle) error) (Vehicle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.vehicles[id]
	if ok {
		v = v.clone()
	} else {
		v = NewVehicle(id)
	}
	if err := fn(&v); err != nil {
		return Vehicle{}, fmt.Errorf("update vehicle %s: %w", id, err)
	}
	v.UpdatedAt = time.Now().UTC()
	m.vehicles[id] = v
	return v.clone(), nil
}

// Order implements OrderStore.
func (m *MemoryStore) Order(_ context.Context, id string) (Order, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return Order{}, fmt.Errorf("read order %s: %w", id, ErrNotFound)
	}
	return o, nil
}

// Orders implements OrderStore.
func (m *MemoryStore) Orders(_ context.Context, user string) ([]Order, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Order
	for _, id := range slices.Sorted(maps.Keys(m.orders)) {
		if o := m.orders[id]; user == "" || o.UserID == user {
			out = append(out, o)
		}
	}
	return out, nil
}

// UpdateOrder implements OrderStore.
func (m *MemoryStore) UpdateOrder(_ context.Context, id string, fn func(*Order) error) (Order, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.orders[id]
	if !ok {
		return Order{}, fmt.Errorf("update order %s: %w", id, ErrNotFound)
	}
	if o.Logistics != nil {
		l := *o.Logistics
		o.Logistics = &l
	}
	if err := fn(&o); err != nil {
		return Order{}, fmt.Errorf("update order %s: %w", id, err)
	}
	o.UpdatedAt = time.Now().UTC()
	m.orders[id] = o
	return o, nil
}

// AddHandoff implements OrderStore.
func (m *MemoryStore) AddHandoff(_ context.Context, h Handoff) (Handoff, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.ID = int64(len(m.handoffs) + 1)
	h.Queue = len(m.handoffs)%5 + 1
	h.Created = time.Now().UTC()
	m.handoffs = append(m.handoffs, h)
	return h, nil
}

// Handoffs implements OrderStore.
func (m *MemoryStore) Handoffs(context.Context) ([]Handoff, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.handoffs)
	slices.SortFunc(out, func(a, b Handoff) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
