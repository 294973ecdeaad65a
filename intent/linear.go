package intent

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// linear is a one-vs-rest linear SVM over hashed features: one weight row
// per feature seen in training, one column per class, stored feature-major
// so that scoring a text walks its few features once.
type linear struct {
	classes int
	col     []int32   // hashed id → row, -1 for a feature never seen in training
	w       []float32 // rows × classes
	bias    []float32
}

// trainLinear fits one L2-regularised L2-loss linear SVM per class by dual
// coordinate descent (Hsieh et al. 2008, as in liblinear) over the training
// vectors xs with labels ys in [0, classes). It is deterministic for a
// given seed and uses every core, one class at a time per core.
func trainLinear(ctx context.Context, xs []vector, ys []int, classes int, hashBits int, c float64, seed uint64) (*linear, error) {
	m := &linear{classes: classes, col: make([]int32, 1<<hashBits)}
	for i := range m.col {
		m.col[i] = -1
	}
	rows := int32(0)
	dense := make([]vector, len(xs)) // ids renumbered to rows
	for i, x := range xs {
		d := make(vector, len(x))
		for j, f := range x {
			if m.col[f.id] < 0 {
				m.col[f.id] = rows
				rows++
			}
			d[j] = feature{id: uint32(m.col[f.id]), val: f.val}
		}
		dense[i] = d
	}
	m.w = make([]float32, int(rows)*classes)
	m.bias = make([]float32, classes)

	work := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			w := make([]float32, rows+1) // last entry is the bias
			for k := range work {
				clear(w)
				dcd(dense, ys, k, w, c, seed+uint64(k))
				for r := range rows {
					m.w[int(r)*classes+k] = w[r]
				}
				m.bias[k] = w[rows]
			}
		})
	}
	var err error
	for k := range classes {
		if err = ctx.Err(); err != nil {
			break
		}
		work <- k
	}
	close(work)
	wg.Wait()
	return m, err
}

// dcd solves the dual of min ½‖w‖² + C Σ max(0, 1 − yᵢ w·xᵢ)² for class k
// against the rest, writing w (bias last, with constant feature 1). The
// dual variables have no upper bound under the squared hinge loss, so only
// those at zero are shrunk away.
func dcd(xs []vector, ys []int, k int, w []float32, c float64, seed uint64) {
	const (
		eps     = 0.1 // liblinear's default stopping tolerance
		maxIter = 1000
	)
	n := len(xs)
	bias := len(w) - 1
	diag := 0.5 / c
	alpha := make([]float64, n)
	qd := make([]float64, n)
	y := make([]float64, n)
	index := make([]int, n)
	for i, x := range xs {
		qd[i] = diag + 1 // the bias feature
		for _, f := range x {
			qd[i] += float64(f.val) * float64(f.val)
		}
		y[i] = -1
		if ys[i] == k {
			y[i] = 1
		}
		index[i] = i
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	active := n
	pgMaxOld := inf
	for range maxIter {
		pgMax, pgMin := -inf, inf
		rng.Shuffle(active, func(i, j int) { index[i], index[j] = index[j], index[i] })
		for s := 0; s < active; s++ {
			i := index[s]
			x := xs[i]
			var dot float32
			for _, f := range x {
				dot += f.val * w[f.id]
			}
			g := float64(dot+w[bias])*y[i] - 1 + alpha[i]*diag
			pg := g
			if alpha[i] == 0 {
				if g > pgMaxOld {
					active--
					index[s], index[active] = index[active], index[s]
					s--
					continue
				}
				pg = min(g, 0)
			}
			pgMax, pgMin = max(pgMax, pg), min(pgMin, pg)
			if pg > 1e-12 || pg < -1e-12 {
				old := alpha[i]
				alpha[i] = max(old-g/qd[i], 0)
				d := float32((alpha[i] - old) * y[i])
				for _, f := range x {
					w[f.id] += d * f.val
				}
				w[bias] += d
			}
		}
		if pgMax-pgMin <= eps {
			if active == n {
				return
			}
			active = n
			pgMaxOld = inf
			continue
		}
		pgMaxOld = pgMax
		if pgMaxOld <= 0 {
			pgMaxOld = inf
		}
	}
}

// scores writes the decision value of every class for x into out.
func (m *linear) scores(x vector, out []float64) {
	for k := range out {
		out[k] = float64(m.bias[k])
	}
	for _, f := range x {
		r := m.col[f.id]
		if r < 0 {
			continue
		}
		row := m.w[int(r)*m.classes : int(r+1)*m.classes]
		v := float64(f.val)
		for k, wk := range row {
			out[k] += v * float64(wk)
		}
	}
}

var inf = math.Inf(1)
