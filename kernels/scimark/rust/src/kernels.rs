//! The five SciMark kernels. Arithmetic is written in exactly the order of the
//! specification (docs/scimark.md) so that the results match the other five
//! languages bit for bit; Rust never contracts a*b+c into an FMA on its own.
//!
//! Layout: a matrix is one flat row-major `Vec<f64>`; rows are slices of it.
//! LU swaps row contents (not pointers) when it pivots.

use crate::rng::Rng;

pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl Matrix {
    pub fn random(rows: usize, cols: usize, rng: &mut Rng) -> Matrix {
        Matrix {
            rows,
            cols,
            data: rng.vector(rows * cols),
        }
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    pub fn sum(&self) -> f64 {
        sum(&self.data)
    }
}

/// Plain left-to-right sum (the checksums depend on this order).
pub fn sum(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for &x in v {
        s += x;
    }
    s
}

// ---------------------------------------------------------------------------
// FFT

pub fn log2_exact(n: usize) -> Option<u32> {
    if n.is_power_of_two() {
        Some(n.trailing_zeros())
    } else {
        None
    }
}

fn fft_bitreverse(n: usize, d: &mut [f64]) {
    let mut j = 0usize;
    for i in 0..n.saturating_sub(1) {
        if i < j {
            d.swap(2 * i, 2 * j);
            d.swap(2 * i + 1, 2 * j + 1);
        }
        let mut k = n >> 1;
        while k <= j {
            j -= k;
            k >>= 1;
        }
        j += k;
    }
}

/// In-place radix-2 transform of n complex points (interleaved re/im);
/// direction -1 forward, +1 inverse (unnormalized).
fn fft_transform(n: usize, d: &mut [f64], direction: i32) {
    if n <= 1 {
        return;
    }
    let logn = log2_exact(n).expect("FFT size must be a power of two");
    let d = &mut d[..2 * n];
    fft_bitreverse(n, d);
    let mut dual = 1usize;
    for _ in 0..logn {
        let mut wr = 1.0f64;
        let mut wi = 0.0f64;
        let theta = 2.0 * direction as f64 * std::f64::consts::PI / (2.0 * dual as f64);
        let s = theta.sin();
        let t = (theta / 2.0).sin();
        let s2 = 2.0 * t * t;
        // One block is 2*dual complex points = 4*dual doubles: the low half
        // holds the `i` points of the butterflies, the high half the `j` points.
        for block in d.chunks_exact_mut(4 * dual) {
            let (lo, hi) = block.split_at_mut(2 * dual);
            let wdr = hi[0];
            let wdi = hi[1];
            hi[0] = lo[0] - wdr;
            hi[1] = lo[1] - wdi;
            lo[0] += wdr;
            lo[1] += wdi;
        }
        for a in 1..dual {
            let tmp = wr - s * wi - s2 * wr;
            wi = wi + s * wr - s2 * wi;
            wr = tmp;
            for block in d.chunks_exact_mut(4 * dual) {
                let (lo, hi) = block.split_at_mut(2 * dual);
                let (lo, hi) = (&mut lo[2 * a..2 * a + 2], &mut hi[2 * a..2 * a + 2]);
                let zr = hi[0];
                let zi = hi[1];
                let wdr = wr * zr - wi * zi;
                let wdi = wr * zi + wi * zr;
                hi[0] = lo[0] - wdr;
                hi[1] = lo[1] - wdi;
                lo[0] += wdr;
                lo[1] += wdi;
            }
        }
        dual *= 2;
    }
}

pub fn fft_forward(n: usize, d: &mut [f64]) {
    fft_transform(n, d, -1);
}

pub fn fft_inverse(n: usize, d: &mut [f64]) {
    fft_transform(n, d, 1);
    let norm = 1.0 / n as f64;
    for x in d[..2 * n].iter_mut() {
        *x *= norm;
    }
}

pub fn fft_flops(n: usize, cycles: u64) -> f64 {
    let nd = n as f64;
    let logn = log2_exact(n).unwrap_or(0) as f64;
    ((5.0 * nd - 2.0) * logn + 2.0 * (nd + 1.0)) * cycles as f64
}

// ---------------------------------------------------------------------------
// SOR

pub const SOR_OMEGA: f64 = 1.25;

pub fn sor_execute(g: &mut Matrix, omega: f64, cycles: u64) {
    let (m, n) = (g.rows, g.cols);
    let omega_over_four = omega * 0.25;
    let one_minus_omega = 1.0 - omega;
    for _ in 0..cycles {
        for i in 1..m.saturating_sub(1) {
            let (before, rest) = g.data.split_at_mut(i * n);
            let up = &before[(i - 1) * n..i * n];
            let (gi, after) = rest.split_at_mut(n);
            let down = &after[..n];
            // `left` carries gi[j - 1], just written, in a register; the
            // arithmetic is unchanged.
            let mut left = gi[0];
            for j in 1..n - 1 {
                let v = omega_over_four * (up[j] + down[j] + left + gi[j + 1])
                    + one_minus_omega * gi[j];
                gi[j] = v;
                left = v;
            }
        }
    }
}

pub fn sor_flops(m: usize, n: usize, cycles: u64) -> f64 {
    (m - 1) as f64 * (n - 1) as f64 * cycles as f64 * 6.0
}

// ---------------------------------------------------------------------------
// Monte Carlo

pub const MC_SEED: i64 = 113;

pub fn mc_count(samples: u64) -> u64 {
    let mut r = Rng::new(MC_SEED);
    let mut inside = 0u64;
    for _ in 0..samples {
        let x = r.next();
        let y = r.next();
        if x * x + y * y <= 1.0 {
            inside += 1;
        }
    }
    inside
}

pub fn mc_estimate(inside: u64, samples: u64) -> f64 {
    4.0 * inside as f64 / samples as f64
}

// ---------------------------------------------------------------------------
// Sparse matrix-vector product, compressed rows

pub struct Sparse {
    pub n: usize,
    /// Actual number of entries: (requested nz / n) * n.
    pub nz: usize,
    pub row: Vec<usize>,
    pub col: Vec<usize>,
    pub val: Vec<f64>,
}

impl Sparse {
    /// The structure only; `val` is filled by the caller from the generator.
    pub fn structure(n: usize, nz_requested: usize) -> Sparse {
        let nr = nz_requested / n;
        let nz = nr * n;
        let mut row = vec![0usize; n + 1];
        let mut col = vec![0usize; nz];
        for r in 0..n {
            let step = (r / nr).max(1);
            row[r + 1] = row[r] + nr;
            for i in 0..nr {
                col[row[r] + i] = i * step;
            }
        }
        Sparse {
            n,
            nz,
            row,
            col,
            val: Vec::new(),
        }
    }

    pub fn matmult(&self, y: &mut [f64], x: &[f64], cycles: u64) {
        let x = &x[..self.n];
        for _ in 0..cycles {
            for (r, yr) in y[..self.n].iter_mut().enumerate() {
                let (start, end) = (self.row[r], self.row[r + 1]);
                let mut sum = 0.0;
                for (&c, &v) in self.col[start..end].iter().zip(&self.val[start..end]) {
                    sum += x[c] * v;
                }
                *yr = sum;
            }
        }
    }
}

pub fn sparse_flops(nz: usize, cycles: u64) -> f64 {
    nz as f64 * 2.0 * cycles as f64
}

// ---------------------------------------------------------------------------
// LU with partial pivoting

/// Factors `a` in place; returns false if it is singular.
pub fn lu_factor(a: &mut Matrix, pivot: &mut [usize]) -> bool {
    let n = a.rows;
    let d = &mut a.data[..n * n];
    for j in 0..n {
        let mut jp = j;
        let mut t = d[j * n + j].abs();
        for i in j + 1..n {
            let ab = d[i * n + j].abs();
            if ab > t {
                jp = i;
                t = ab;
            }
        }
        pivot[j] = jp;
        if d[jp * n + j] == 0.0 {
            return false;
        }
        if jp != j {
            let (top, bottom) = d.split_at_mut(jp * n);
            top[j * n..(j + 1) * n].swap_with_slice(&mut bottom[..n]);
        }
        if j < n - 1 {
            let recp = 1.0 / d[j * n + j];
            for k in j + 1..n {
                d[k * n + j] *= recp;
            }
            let (top, bottom) = d.split_at_mut((j + 1) * n);
            let aj = &top[j * n + j + 1..(j + 1) * n];
            for aii in bottom.chunks_exact_mut(n) {
                let aiij = aii[j];
                for (x, &y) in aii[j + 1..].iter_mut().zip(aj) {
                    *x -= aiij * y;
                }
            }
        }
    }
    true
}

/// Solves LU x = P b in place (`x` holds b on entry).
pub fn lu_solve(lu: &Matrix, pivot: &[usize], x: &mut [f64]) {
    let n = lu.rows;
    for (i, &p) in pivot[..n].iter().enumerate() {
        x.swap(i, p);
    }
    for i in 1..n {
        let row = lu.row(i);
        let mut s = x[i];
        for j in 0..i {
            s -= row[j] * x[j];
        }
        x[i] = s;
    }
    for i in (0..n).rev() {
        let row = lu.row(i);
        let mut s = x[i];
        for j in i + 1..n {
            s -= row[j] * x[j];
        }
        x[i] = s / row[i];
    }
}

pub fn lu_flops(n: usize, cycles: u64) -> f64 {
    let nd = n as f64;
    2.0 * nd * nd * nd / 3.0 * cycles as f64
}
