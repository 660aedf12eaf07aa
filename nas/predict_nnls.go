package nas

import "math"

// The least squares behind FitThroughput. gonum has them (mat.QR,
// optimize), but this module does not carry gonum itself (only its plot
// package, which does not need it); a handful of columns needs nothing
// more than this.

// nnls returns the x ≥ 0 minimising ‖A·x − b‖₂, a given as rows of k
// columns, by Lawson and Hanson's active-set method (Solving Least
// Squares Problems, Prentice-Hall 1974, ch. 23, algorithm NNLS): move the
// column with the largest positive gradient −∂‖A·x − b‖²/∂x into the
// passive (free) set, solve the unconstrained problem on that set, and
// step back towards the previous x, dropping columns, while the solution
// has a non-positive entry. Columns should be of comparable norm
// (FitThroughput scales them to 1): the stopping tolerance is absolute.
func nnls(a [][]float64, b []float64) []float64 {
	m, k := len(a), 0
	if m > 0 {
		k = len(a[0])
	}
	x := make([]float64, k)
	passive := make([]bool, k)
	tol := 1e-10 * math.Max(1, norm(b))
	for iter := 0; iter < 3*k+3; iter++ {
		w := gradient(a, b, x)
		t, best := -1, tol
		for j := range k {
			if !passive[j] && w[j] > best {
				t, best = j, w[j]
			}
		}
		if t < 0 {
			break // Kuhn–Tucker conditions hold: x is optimal
		}
		passive[t] = true
		for inner := 0; inner < 3*k+3; inner++ {
			z := lstsq(a, b, passive)
			alpha, feasible := 1.0, true
			for j := range k {
				if passive[j] && z[j] <= 0 {
					feasible = false
					if d := x[j] - z[j]; d > 0 {
						alpha = math.Min(alpha, x[j]/d)
					} else {
						alpha = 0
					}
				}
			}
			if feasible {
				copy(x, z)
				break
			}
			for j := range k {
				x[j] += alpha * (z[j] - x[j])
				if passive[j] && x[j] <= 1e-15 {
					passive[j], x[j] = false, 0
				}
			}
		}
	}
	return x
}

// gradient returns Aᵀ(b − A·x).
func gradient(a [][]float64, b, x []float64) []float64 {
	w := make([]float64, len(x))
	for i, row := range a {
		r := b[i]
		for j, v := range row {
			r -= v * x[j]
		}
		for j, v := range row {
			w[j] += v * r
		}
	}
	return w
}

// lstsq returns the x minimising ‖A·x − b‖₂ with x_j = 0 wherever use[j]
// is false, by Householder QR of the used columns. A column that is (to
// rounding) a combination of the ones before it gets 0.
func lstsq(a [][]float64, b []float64, use []bool) []float64 {
	var cols []int
	for j, u := range use {
		if u {
			cols = append(cols, j)
		}
	}
	m, p := len(a), len(cols)
	r := make([][]float64, m) // the used columns, reduced in place to R
	for i := range r {
		r[i] = make([]float64, p)
		for c, j := range cols {
			r[i][c] = a[i][j]
		}
	}
	y := append([]float64(nil), b...)
	scale := 0.0
	for c := 0; c < p && c < m; c++ {
		// The reflection I − 2vvᵀ/vᵀv maps column c below the diagonal
		// onto its first entry.
		s := 0.0
		for i := c; i < m; i++ {
			s += r[i][c] * r[i][c]
		}
		s = math.Sqrt(s)
		scale = math.Max(scale, s)
		if s == 0 {
			continue
		}
		if r[c][c] > 0 {
			s = -s
		}
		v := make([]float64, m-c)
		for i := c; i < m; i++ {
			v[i-c] = r[i][c]
		}
		v[0] -= s
		vv := 0.0
		for _, e := range v {
			vv += e * e
		}
		if vv == 0 {
			continue
		}
		for cc := c; cc < p; cc++ {
			d := 0.0
			for i := c; i < m; i++ {
				d += v[i-c] * r[i][cc]
			}
			d *= 2 / vv
			for i := c; i < m; i++ {
				r[i][cc] -= d * v[i-c]
			}
		}
		d := 0.0
		for i := c; i < m; i++ {
			d += v[i-c] * y[i]
		}
		d *= 2 / vv
		for i := c; i < m; i++ {
			y[i] -= d * v[i-c]
		}
	}
	z := make([]float64, p)
	for c := min(p, m) - 1; c >= 0; c-- {
		if math.Abs(r[c][c]) <= 1e-12*scale {
			continue // dependent column: 0
		}
		s := y[c]
		for cc := c + 1; cc < p; cc++ {
			s -= r[c][cc] * z[cc]
		}
		z[c] = s / r[c][c]
	}
	x := make([]float64, len(use))
	for c, j := range cols {
		x[j] = z[c]
	}
	return x
}

func norm(v []float64) float64 {
	s := 0.0
	for _, e := range v {
		s += e * e
	}
	return math.Sqrt(s)
}
