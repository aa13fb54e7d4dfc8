package main

// The five SciMark kernels. Arithmetic follows the order of the specification
// (docs/scimark.md) so that results match the other languages bit for bit.
// Every product that is added to something is wrapped in float64(...): the Go
// spec lets the compiler fuse x*y+z into an FMA (it does on arm64, ppc64le,
// s390x and on amd64 with GOAMD64=v3), and an explicit conversion forbids it.
//
// Layout: matrices are arrays of rows ([][]float64); LU swaps row slices.

import "math"

// ---------------------------------------------------------------------------
// FFT

func log2Exact(n int) int {
	k := 0
	for (1 << k) < n {
		k++
	}
	if (1 << k) != n {
		return -1
	}
	return k
}

func fftBitReverse(n int, d []float64) {
	j := 0
	for i := 0; i < n-1; i++ {
		if i < j {
			d[2*i], d[2*j] = d[2*j], d[2*i]
			d[2*i+1], d[2*j+1] = d[2*j+1], d[2*i+1]
		}
		k := n >> 1
		for k <= j {
			j -= k
			k >>= 1
		}
		j += k
	}
}

// fftTransform is the in-place radix-2 transform of n complex points
// (interleaved re/im); direction -1 forward, +1 inverse (unnormalized).
func fftTransform(n int, d []float64, direction int) {
	if n <= 1 {
		return
	}
	logn := log2Exact(n)
	d = d[:2*n]
	fftBitReverse(n, d)
	dual := 1
	for bit := 0; bit < logn; bit, dual = bit+1, dual*2 {
		wr, wi := 1.0, 0.0
		theta := 2.0 * float64(direction) * math.Pi / (2.0 * float64(dual))
		s := math.Sin(theta)
		t := math.Sin(theta / 2.0)
		s2 := 2.0 * t * t
		for b := 0; b < n; b += 2 * dual {
			i, j := 2*b, 2*(b+dual)
			wdr, wdi := d[j], d[j+1]
			d[j] = d[i] - wdr
			d[j+1] = d[i+1] - wdi
			d[i] += wdr
			d[i+1] += wdi
		}
		for a := 1; a < dual; a++ {
			tmp := wr - float64(s*wi) - float64(s2*wr)
			wi = wi + float64(s*wr) - float64(s2*wi)
			wr = tmp
			for b := 0; b < n; b += 2 * dual {
				i, j := 2*(b+a), 2*(b+a+dual)
				zr, zi := d[j], d[j+1]
				wdr := float64(wr*zr) - float64(wi*zi)
				wdi := float64(wr*zi) + float64(wi*zr)
				d[j] = d[i] - wdr
				d[j+1] = d[i+1] - wdi
				d[i] += wdr
				d[i+1] += wdi
			}
		}
	}
}

func fftForward(n int, d []float64) { fftTransform(n, d, -1) }

func fftInverse(n int, d []float64) {
	fftTransform(n, d, 1)
	norm := 1.0 / float64(n)
	d = d[:2*n]
	for i := range d {
		d[i] *= norm
	}
}

func fftFlops(n int, cycles int64) float64 {
	nd, logn := float64(n), float64(log2Exact(n))
	return ((5.0*nd-2.0)*logn + 2.0*(nd+1.0)) * float64(cycles)
}

// ---------------------------------------------------------------------------
// SOR

const sorOmega = 1.25

func sorExecute(m, n int, omega float64, g [][]float64, cycles int64) {
	omegaOverFour := omega * 0.25
	oneMinusOmega := 1.0 - omega
	for p := int64(0); p < cycles; p++ {
		for i := 1; i < m-1; i++ {
			gi := g[i][:n]
			gim1 := g[i-1][:n]
			gip1 := g[i+1][:n]
			// left carries gi[j-1], just written, in a register (the
			// arithmetic is unchanged; this halves the time of the loop).
			left := gi[0]
			for j := 1; j < n-1; j++ {
				v := float64(omegaOverFour*(gim1[j]+gip1[j]+left+gi[j+1])) +
					float64(oneMinusOmega*gi[j])
				gi[j] = v
				left = v
			}
		}
	}
}

func sorFlops(m, n int, cycles int64) float64 {
	return float64(m-1) * float64(n-1) * float64(cycles) * 6.0
}

// ---------------------------------------------------------------------------
// Monte Carlo

const mcSeed = 113

func mcCount(samples int64) int64 {
	r := NewRng(mcSeed)
	var inside int64
	for s := int64(0); s < samples; s++ {
		x := r.Next()
		y := r.Next()
		if float64(x*x)+float64(y*y) <= 1.0 {
			inside++
		}
	}
	return inside
}

func mcEstimate(inside, samples int64) float64 {
	return 4.0 * float64(inside) / float64(samples)
}

// ---------------------------------------------------------------------------
// Sparse matrix-vector product, compressed rows

type Sparse struct {
	n, nz    int // nz = actual entries = (requested / n) * n
	row, col []int
	val      []float64
}

// newSparse builds the structure; val is filled by the caller.
func newSparse(n, nzRequested int) *Sparse {
	nr := nzRequested / n
	a := &Sparse{n: n, nz: nr * n, row: make([]int, n+1), col: make([]int, nr*n)}
	for r := 0; r < n; r++ {
		step := r / nr
		if step < 1 {
			step = 1
		}
		a.row[r+1] = a.row[r] + nr
		for i := 0; i < nr; i++ {
			a.col[a.row[r]+i] = i * step
		}
	}
	return a
}

func (a *Sparse) matmult(y, x []float64, cycles int64) {
	row, col, val := a.row, a.col, a.val
	for p := int64(0); p < cycles; p++ {
		for r := 0; r < a.n; r++ {
			sum := 0.0
			end := row[r+1]
			for i := row[r]; i < end; i++ {
				sum += float64(x[col[i]] * val[i])
			}
			y[r] = sum
		}
	}
}

func sparseFlops(nz int, cycles int64) float64 {
	return float64(nz) * 2.0 * float64(cycles)
}

// ---------------------------------------------------------------------------
// LU with partial pivoting

// luFactor factors a in place; it returns false if a is singular.
func luFactor(n int, a [][]float64, pivot []int) bool {
	for j := 0; j < n; j++ {
		jp := j
		t := math.Abs(a[j][j])
		for i := j + 1; i < n; i++ {
			ab := math.Abs(a[i][j])
			if ab > t {
				jp = i
				t = ab
			}
		}
		pivot[j] = jp
		if a[jp][j] == 0.0 {
			return false
		}
		if jp != j {
			a[j], a[jp] = a[jp], a[j]
		}
		if j < n-1 {
			recp := 1.0 / a[j][j]
			for k := j + 1; k < n; k++ {
				a[k][j] *= recp
			}
			aj := a[j][j+1 : n]
			for ii := j + 1; ii < n; ii++ {
				aii := a[ii][j+1 : n]
				aiij := a[ii][j]
				for jj, v := range aj {
					aii[jj] -= float64(aiij * v)
				}
			}
		}
	}
	return true
}

// luSolve solves LU x = P b in place (x holds b on entry).
func luSolve(n int, lu [][]float64, pivot []int, x []float64) {
	for i := 0; i < n; i++ {
		ip := pivot[i]
		x[i], x[ip] = x[ip], x[i]
	}
	for i := 1; i < n; i++ {
		s := x[i]
		for j := 0; j < i; j++ {
			s -= float64(lu[i][j] * x[j])
		}
		x[i] = s
	}
	for i := n - 1; i >= 0; i-- {
		s := x[i]
		for j := i + 1; j < n; j++ {
			s -= float64(lu[i][j] * x[j])
		}
		x[i] = s / lu[i][i]
	}
}

func matrixCopy(dst, src [][]float64) {
	for i := range src {
		copy(dst[i], src[i])
	}
}

func newMatrix(m, n int) [][]float64 {
	a := make([][]float64, m)
	for i := range a {
		a[i] = make([]float64, n)
	}
	return a
}

func luFlops(n int, cycles int64) float64 {
	nd := float64(n)
	return 2.0 * nd * nd * nd / 3.0 * float64(cycles)
}

// sum is a plain left-to-right sum (the checksums depend on the order).
func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func sumMatrix(a [][]float64) float64 {
	s := 0.0
	for _, row := range a {
		for _, x := range row {
			s += x
		}
	}
	return s
}
