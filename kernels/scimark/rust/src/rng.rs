//! The SciMark random number generator: a subtractive lagged-Fibonacci generator
//! with a 17-entry table and modulus 2^31 - 1, specified in docs/scimark.md so
//! that every language draws the same doubles.

const M1: i32 = 2_147_483_647; // 2^31 - 1

pub struct Rng {
    m: [i32; 17],
    i: usize,
    j: usize,
    dm1: f64,
}

/// 9069 * x mod 2^31 for 0 <= x < 2^31, in 32-bit arithmetic that cannot
/// overflow: x is split into 16-bit halves.
fn step_seed(x: i32) -> i32 {
    let lo = x & 0xFFFF;
    let hi = x >> 16;
    let p = 9069 * lo;
    let h = ((p >> 16) + 9069 * hi) & 0x7FFF;
    (h << 16) | (p & 0xFFFF)
}

impl Rng {
    /// The seed must be nonzero (the program only uses 101010 and 113).
    pub fn new(seed: i64) -> Rng {
        let mut s = seed.unsigned_abs().min(M1 as u64) as i64;
        if s % 2 == 0 {
            s -= 1;
        }
        let mut x = s as i32;
        let mut m = [0i32; 17];
        for slot in m.iter_mut() {
            x = step_seed(x);
            *slot = x;
        }
        Rng {
            m,
            i: 4,
            j: 16,
            dm1: 1.0 / M1 as f64,
        }
    }

    #[inline(always)]
    pub fn next(&mut self) -> f64 {
        let (i, j) = (self.i, self.j);
        let mut k = self.m[i] - self.m[j];
        if k < 0 {
            k += M1;
        }
        self.m[j] = k;
        self.i = if i == 0 { 16 } else { i - 1 };
        self.j = if j == 0 { 16 } else { j - 1 };
        k as f64 * self.dm1
    }

    pub fn vector(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.next()).collect()
    }

    pub fn skip(&mut self, n: usize) {
        for _ in 0..n {
            self.next();
        }
    }
}
