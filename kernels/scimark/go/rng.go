package main

// The SciMark random number generator: a subtractive lagged-Fibonacci
// generator with a 17-entry table and modulus 2^31 - 1, specified in
// docs/scimark.md so that every language draws the same doubles.

const rngM1 int32 = 2147483647 // 2^31 - 1

type Rng struct {
	m   [17]int32
	i   int
	j   int
	dm1 float64
}

// stepSeed returns 9069*x mod 2^31 for 0 <= x < 2^31 in 32-bit arithmetic
// that cannot overflow: x is split into 16-bit halves.
func stepSeed(x int32) int32 {
	lo := x & 0xFFFF
	hi := x >> 16
	p := 9069 * lo
	h := ((p >> 16) + 9069*hi) & 0x7FFF
	return (h << 16) | (p & 0xFFFF)
}

// NewRng seeds a generator; the seed must be nonzero (the program only uses
// 101010 and 113).
func NewRng(seed int64) *Rng {
	s := seed
	if s < 0 {
		s = -s
	}
	if s > int64(rngM1) {
		s = int64(rngM1)
	}
	if s%2 == 0 {
		s--
	}
	r := &Rng{i: 4, j: 16, dm1: 1.0 / float64(rngM1)}
	x := int32(s)
	for k := 0; k < 17; k++ {
		x = stepSeed(x)
		r.m[k] = x
	}
	return r
}

func (r *Rng) Next() float64 {
	i, j := r.i, r.j
	k := r.m[i] - r.m[j]
	if k < 0 {
		k += rngM1
	}
	r.m[j] = k
	if i == 0 {
		r.i = 16
	} else {
		r.i = i - 1
	}
	if j == 0 {
		r.j = 16
	} else {
		r.j = j - 1
	}
	return float64(k) * r.dm1
}

func (r *Rng) Vector(n int) []float64 {
	v := make([]float64, n)
	for k := range v {
		v[k] = r.Next()
	}
	return v
}

// Matrix draws rows*cols values row by row into an array of rows.
func (r *Rng) Matrix(rows, cols int) [][]float64 {
	a := make([][]float64, rows)
	for i := range a {
		a[i] = r.Vector(cols)
	}
	return a
}

func (r *Rng) Skip(n int) {
	for k := 0; k < n; k++ {
		r.Next()
	}
}
