#!/usr/bin/env node
// perflab SciMark 2 kernels in JavaScript (Node.js).
//
// Written from the specification in docs/scimark.md (issue 6): the same random
// numbers, the same data order and the same arithmetic order as the C, Java,
// Rust, Go and Python programs beside it. JavaScript numbers are IEEE doubles
// and V8 never fuses a*b+c, so the results agree bit for bit.
//
// Layout: vectors are Float64Array; matrices are arrays of Float64Array rows.
//
// Run: node scimark.js [--large] [--min-time S] [--verify-only] [--kernels ..]
'use strict';

// ---------------------------------------------------------------------------
// Random numbers: subtractive lagged Fibonacci, 17-entry table.

const M1 = 2147483647; // 2^31 - 1

// 9069 * x mod 2^31 for 0 <= x < 2^31 in 32-bit integer arithmetic that cannot
// overflow: x is split into 16-bit halves.
function stepSeed(x) {
  const lo = x & 0xffff;
  const hi = x >> 16;
  const p = 9069 * lo;
  const h = ((p >> 16) + 9069 * hi) & 0x7fff;
  return (h << 16) | (p & 0xffff);
}

class Rng {
  // The seed must be nonzero (the program only uses 101010 and 113).
  constructor(seed) {
    let s = Math.abs(seed);
    if (s > M1) s = M1;
    if (s % 2 === 0) s -= 1;
    this.m = new Int32Array(17);
    let x = s;
    for (let k = 0; k < 17; k++) {
      x = stepSeed(x);
      this.m[k] = x;
    }
    this.i = 4;
    this.j = 16;
    this.dm1 = 1.0 / M1;
  }

  next() {
    const i = this.i;
    const j = this.j;
    const m = this.m;
    let k = m[i] - m[j];
    // "add m1 if k < 0", written without a branch: (k >> 31) is -1 exactly when
    // k < 0. The sign of k is random, so V8's branch mispredicted half the time
    // (this doubles Monte Carlo); the integer result is identical.
    k += (k >> 31) & M1;
    m[j] = k;
    this.i = i === 0 ? 16 : i - 1;
    this.j = j === 0 ? 16 : j - 1;
    return k * this.dm1;
  }

  vector(n) {
    const v = new Float64Array(n);
    for (let k = 0; k < n; k++) v[k] = this.next();
    return v;
  }

  matrix(rows, cols) {
    const a = new Array(rows);
    for (let r = 0; r < rows; r++) a[r] = this.vector(cols);
    return a;
  }

  skip(n) {
    for (let k = 0; k < n; k++) this.next();
  }
}

// ---------------------------------------------------------------------------
// FFT

function log2Exact(n) {
  let k = 0;
  while (2 ** k < n) k++;
  return 2 ** k === n ? k : -1;
}

function fftBitReverse(n, d) {
  let j = 0;
  for (let i = 0; i < n - 1; i++) {
    if (i < j) {
      const tr = d[2 * i];
      const ti = d[2 * i + 1];
      d[2 * i] = d[2 * j];
      d[2 * i + 1] = d[2 * j + 1];
      d[2 * j] = tr;
      d[2 * j + 1] = ti;
    }
    let k = n >> 1;
    while (k <= j) {
      j -= k;
      k >>= 1;
    }
    j += k;
  }
}

// In-place radix-2 transform; direction -1 forward, +1 inverse (unnormalized).
function fftTransform(n, d, direction) {
  if (n <= 1) return;
  const logn = log2Exact(n);
  fftBitReverse(n, d);
  let dual = 1;
  for (let bit = 0; bit < logn; bit++, dual *= 2) {
    let wr = 1.0;
    let wi = 0.0;
    const theta = (2.0 * direction * Math.PI) / (2.0 * dual);
    const s = Math.sin(theta);
    const t = Math.sin(theta / 2.0);
    const s2 = 2.0 * t * t;
    for (let b = 0; b < n; b += 2 * dual) {
      const i = 2 * b;
      const j = 2 * (b + dual);
      const wdr = d[j];
      const wdi = d[j + 1];
      d[j] = d[i] - wdr;
      d[j + 1] = d[i + 1] - wdi;
      d[i] += wdr;
      d[i + 1] += wdi;
    }
    for (let a = 1; a < dual; a++) {
      const tmp = wr - s * wi - s2 * wr;
      wi = wi + s * wr - s2 * wi;
      wr = tmp;
      for (let b = 0; b < n; b += 2 * dual) {
        const i = 2 * (b + a);
        const j = 2 * (b + a + dual);
        const zr = d[j];
        const zi = d[j + 1];
        const wdr = wr * zr - wi * zi;
        const wdi = wr * zi + wi * zr;
        d[j] = d[i] - wdr;
        d[j + 1] = d[i + 1] - wdi;
        d[i] += wdr;
        d[i + 1] += wdi;
      }
    }
  }
}

function fftForward(n, d) {
  fftTransform(n, d, -1);
}

function fftInverse(n, d) {
  fftTransform(n, d, 1);
  const norm = 1.0 / n;
  for (let i = 0; i < 2 * n; i++) d[i] *= norm;
}

function fftFlops(n, cycles) {
  const logn = log2Exact(n);
  return ((5.0 * n - 2.0) * logn + 2.0 * (n + 1.0)) * cycles;
}

// ---------------------------------------------------------------------------
// SOR

const SOR_OMEGA = 1.25;

function sorExecute(m, n, omega, g, cycles) {
  const omegaOverFour = omega * 0.25;
  const oneMinusOmega = 1.0 - omega;
  for (let p = 0; p < cycles; p++) {
    for (let i = 1; i < m - 1; i++) {
      const gi = g[i];
      const gim1 = g[i - 1];
      const gip1 = g[i + 1];
      // left carries gi[j - 1], just written (same arithmetic, fewer loads)
      let left = gi[0];
      for (let j = 1; j < n - 1; j++) {
        const v = omegaOverFour * (gim1[j] + gip1[j] + left + gi[j + 1]) + oneMinusOmega * gi[j];
        gi[j] = v;
        left = v;
      }
    }
  }
}

function sorFlops(m, n, cycles) {
  return (m - 1) * (n - 1) * cycles * 6.0;
}

// ---------------------------------------------------------------------------
// Monte Carlo

const MC_SEED = 113;

function mcCount(samples) {
  const r = new Rng(MC_SEED);
  let inside = 0;
  for (let s = 0; s < samples; s++) {
    const x = r.next();
    const y = r.next();
    if (x * x + y * y <= 1.0) inside++;
  }
  return inside;
}

function mcEstimate(inside, samples) {
  return (4.0 * inside) / samples;
}

// ---------------------------------------------------------------------------
// Sparse matrix-vector product, compressed rows

class Sparse {
  // The structure only; val is filled by the caller from the generator.
  constructor(n, nzRequested) {
    const nr = Math.floor(nzRequested / n);
    this.n = n;
    this.nz = nr * n; // actual entries
    this.row = new Int32Array(n + 1);
    this.col = new Int32Array(this.nz);
    this.val = null;
    for (let r = 0; r < n; r++) {
      const step = Math.max(1, Math.floor(r / nr));
      this.row[r + 1] = this.row[r] + nr;
      for (let i = 0; i < nr; i++) this.col[this.row[r] + i] = i * step;
    }
  }
}

function sparseMatmult(n, y, val, row, col, x, cycles) {
  for (let p = 0; p < cycles; p++) {
    for (let r = 0; r < n; r++) {
      let sum = 0.0;
      const end = row[r + 1];
      for (let i = row[r]; i < end; i++) sum += x[col[i]] * val[i];
      y[r] = sum;
    }
  }
}

function sparseFlops(nz, cycles) {
  return nz * 2.0 * cycles;
}

// ---------------------------------------------------------------------------
// LU with partial pivoting

// Factors a (array of rows) in place; returns false if it is singular.
function luFactor(n, a, pivot) {
  for (let j = 0; j < n; j++) {
    let jp = j;
    let t = Math.abs(a[j][j]);
    for (let i = j + 1; i < n; i++) {
      const ab = Math.abs(a[i][j]);
      if (ab > t) {
        jp = i;
        t = ab;
      }
    }
    pivot[j] = jp;
    if (a[jp][j] === 0.0) return false;
    if (jp !== j) {
      const tmp = a[j];
      a[j] = a[jp];
      a[jp] = tmp;
    }
    if (j < n - 1) {
      const recp = 1.0 / a[j][j];
      for (let k = j + 1; k < n; k++) a[k][j] *= recp;
      const aj = a[j];
      for (let ii = j + 1; ii < n; ii++) {
        const aii = a[ii];
        const aiij = aii[j];
        for (let jj = j + 1; jj < n; jj++) aii[jj] -= aiij * aj[jj];
      }
    }
  }
  return true;
}

// Solves LU x = P b in place (x holds b on entry).
function luSolve(n, lu, pivot, x) {
  for (let i = 0; i < n; i++) {
    const ip = pivot[i];
    const t = x[i];
    x[i] = x[ip];
    x[ip] = t;
  }
  for (let i = 1; i < n; i++) {
    let s = x[i];
    const row = lu[i];
    for (let j = 0; j < i; j++) s -= row[j] * x[j];
    x[i] = s;
  }
  for (let i = n - 1; i >= 0; i--) {
    let s = x[i];
    const row = lu[i];
    for (let j = i + 1; j < n; j++) s -= row[j] * x[j];
    x[i] = s / row[i];
  }
}

function matrixCopy(dst, src) {
  for (let i = 0; i < src.length; i++) dst[i].set(src[i]);
}

function newMatrix(m, n) {
  const a = new Array(m);
  for (let i = 0; i < m; i++) a[i] = new Float64Array(n);
  return a;
}

function luFlops(n, cycles) {
  return ((2.0 * n * n * n) / 3.0) * cycles;
}

// Plain left-to-right sums (the checksums depend on the order).
function sum(v) {
  let s = 0.0;
  for (let i = 0; i < v.length; i++) s += v[i];
  return s;
}

function sumMatrix(a) {
  let s = 0.0;
  for (const row of a) for (let j = 0; j < row.length; j++) s += row[j];
  return s;
}

// ---------------------------------------------------------------------------
// Sizes and results

const KERNELS = ['fft', 'sor', 'mc', 'sparse', 'lu'];
const SIZES = {
  default: { fftN: 1024, sorM: 100, sorN: 100, sparseN: 1000, sparseNz: 5000, luN: 100 },
  large: { fftN: 1048576, sorM: 1000, sorN: 1000, sparseN: 100000, sparseNz: 1000000, luN: 1000 },
};
const VERIFY_SOR_SWEEPS = 10;
const VERIFY_MC_SAMPLES = 1000000;

function newResult() {
  return { mflops: null, cycles: null, seconds: null, cpu_seconds: null, checksum: null, checks: {} };
}

// ---------------------------------------------------------------------------
// Verification pass

function verifyAll(sz, sel, res) {
  const r = new Rng(101010);

  if (sel.fft) {
    const n = sz.fftN;
    const x = r.vector(2 * n);
    const y = Float64Array.from(x);
    fftForward(n, y);
    res.fft.checksum = sum(y);
    fftInverse(n, y);
    let diff = 0.0;
    for (let i = 0; i < 2 * n; i++) {
      const d = y[i] - x[i];
      diff += d * d;
    }
    res.fft.checks = { n, rms_error: Math.sqrt(diff / (2.0 * n)) };
  } else {
    r.skip(2 * sz.fftN);
  }

  if (sel.sor) {
    const g = r.matrix(sz.sorM, sz.sorN);
    sorExecute(sz.sorM, sz.sorN, SOR_OMEGA, g, VERIFY_SOR_SWEEPS);
    res.sor.checksum = sumMatrix(g);
    res.sor.checks = { m: sz.sorM, n: sz.sorN, sweeps: VERIFY_SOR_SWEEPS };
  } else {
    r.skip(sz.sorM * sz.sorN);
  }

  if (sel.mc) {
    const inside = mcCount(VERIFY_MC_SAMPLES);
    res.mc.checksum = mcEstimate(inside, VERIFY_MC_SAMPLES);
    res.mc.checks = { samples: VERIFY_MC_SAMPLES, inside };
  }

  const sp = new Sparse(sz.sparseN, sz.sparseNz);
  if (sel.sparse) {
    const x = r.vector(sp.n);
    sp.val = r.vector(sp.nz);
    const y = new Float64Array(sp.n);
    sparseMatmult(sp.n, y, sp.val, sp.row, sp.col, x, 1);
    res.sparse.checksum = sum(y);
    res.sparse.checks = { n: sp.n, nz: sp.nz };
  } else {
    r.skip(sp.n + sp.nz);
  }

  if (sel.lu) {
    const n = sz.luN;
    const a = r.matrix(n, n);
    const b = r.vector(n);
    const lu = newMatrix(n, n);
    matrixCopy(lu, a);
    const pivot = new Int32Array(n);
    if (!luFactor(n, lu, pivot)) throw new Error('LU matrix is singular');
    res.lu.checksum = sumMatrix(lu);
    const x = Float64Array.from(b);
    luSolve(n, lu, pivot, x);
    let resid = 0.0;
    for (let i = 0; i < n; i++) {
      let s = 0.0;
      const row = a[i];
      for (let j = 0; j < n; j++) s += row[j] * x[j];
      const d = Math.abs(s - b[i]);
      if (d > resid) resid = d;
    }
    res.lu.checks = { n, pivot: Array.from(pivot), residual: resid };
  }
}

// ---------------------------------------------------------------------------
// Timed pass

function cpuNow() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1e-6;
}

function calibrate(minTime, res, run) {
  let cycles = 1;
  for (;;) {
    const c0 = cpuNow();
    const w0 = process.hrtime.bigint();
    run(cycles);
    const secs = Number(process.hrtime.bigint() - w0) * 1e-9;
    const c1 = cpuNow();
    if (secs >= minTime) {
      res.cycles = cycles;
      res.seconds = secs;
      res.cpu_seconds = c1 - c0;
      return;
    }
    cycles *= 2;
  }
}

let mcSink = 0;

function timeAll(sz, sel, minTime, res) {
  const r = new Rng(101010);
  const last = KERNELS.reduce((acc, k, idx) => (sel[k] ? idx : acc), -1);

  if (sel.fft) {
    const n = sz.fftN;
    const d = r.vector(2 * n);
    calibrate(minTime, res.fft, (cycles) => {
      for (let c = 0; c < cycles; c++) {
        fftForward(n, d);
        fftInverse(n, d);
      }
    });
    res.fft.mflops = (fftFlops(n, res.fft.cycles) / res.fft.seconds) * 1e-6;
  } else if (last > 0) {
    r.skip(2 * sz.fftN);
  }

  if (sel.sor) {
    const g = r.matrix(sz.sorM, sz.sorN);
    calibrate(minTime, res.sor, (cycles) => sorExecute(sz.sorM, sz.sorN, SOR_OMEGA, g, cycles));
    res.sor.mflops = (sorFlops(sz.sorM, sz.sorN, res.sor.cycles) / res.sor.seconds) * 1e-6;
  } else if (last > 1) {
    r.skip(sz.sorM * sz.sorN);
  }

  if (sel.mc) {
    calibrate(minTime, res.mc, (cycles) => {
      mcSink = mcCount(cycles);
    });
    res.mc.mflops = ((res.mc.cycles * 4.0) / res.mc.seconds) * 1e-6;
  }

  if (last >= 3) {
    const sp = new Sparse(sz.sparseN, sz.sparseNz);
    if (sel.sparse) {
      const x = r.vector(sp.n);
      sp.val = r.vector(sp.nz);
      const y = new Float64Array(sp.n);
      calibrate(minTime, res.sparse, (cycles) =>
        sparseMatmult(sp.n, y, sp.val, sp.row, sp.col, x, cycles),
      );
      res.sparse.mflops = (sparseFlops(sp.nz, res.sparse.cycles) / res.sparse.seconds) * 1e-6;
    } else if (last > 3) {
      r.skip(sp.n + sp.nz);
    }
  }

  if (sel.lu) {
    const n = sz.luN;
    const a = r.matrix(n, n);
    const lu = newMatrix(n, n);
    const pivot = new Int32Array(n);
    calibrate(minTime, res.lu, (cycles) => {
      for (let c = 0; c < cycles; c++) {
        matrixCopy(lu, a);
        if (!luFactor(n, lu, pivot)) throw new Error('LU matrix is singular');
      }
    });
    res.lu.mflops = (luFlops(n, res.lu.cycles) / res.lu.seconds) * 1e-6;
  }
}

// ---------------------------------------------------------------------------
// Self-test

function selfTest() {
  let failures = 0;
  const r = new Rng(101010);
  const want = new Map([
    [1, 0.33525962398166753],
    [2, 0.6972472442766872],
    [3, 0.9718488529193443],
    [4, 0.9384686127018503],
    [5, 0.39871413279264895],
    [217, 0.01971507445895815],
    [1000, 0.2497384516753901],
  ]);
  for (let k = 1; k <= 1000; k++) {
    const v = r.next();
    if (want.has(k) && v !== want.get(k)) {
      console.log(`FAIL seed 101010 draw ${k}: got ${v} want ${want.get(k)}`);
      failures++;
    }
  }
  const v = new Rng(113).next();
  if (v !== 0.2915372323671064) {
    console.log(`FAIL seed 113 draw 1: got ${v} want 0.2915372323671064`);
    failures++;
  }
  const mc = mcEstimate(mcCount(VERIFY_MC_SAMPLES), VERIFY_MC_SAMPLES);
  if (mc !== 3.139796) {
    console.log(`FAIL monte carlo 1e6 samples: got ${mc} want 3.139796`);
    failures++;
  }
  if (failures > 0) return 1;
  console.log('ok');
  return 0;
}

// ---------------------------------------------------------------------------
// Command line

const USAGE = `usage: node scimark.js [--large] [--min-time SECONDS] [--verify-only]
                       [--kernels fft,sor,mc,sparse,lu] [--self-test]
Prints one line of JSON. Exit codes: 0 ok, 1 error or self-test failure, 2 usage.
`;

class UsageError extends Error {}

function parseArgs(args) {
  const o = { large: false, verifyOnly: false, selfTest: false, help: false, minTime: 2.0 };
  o.sel = Object.fromEntries(KERNELS.map((k) => [k, true]));
  for (let a = 0; a < args.length; a++) {
    let name = args[a];
    let val = null;
    const eq = name.indexOf('=');
    if (name.startsWith('--') && eq > 0) {
      val = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (name === '--large' && val === null) o.large = true;
    else if (name === '--verify-only' && val === null) o.verifyOnly = true;
    else if (name === '--self-test' && val === null) o.selfTest = true;
    else if (name === '--help' || name === '-h') o.help = true;
    else if (name === '--min-time' || name === '--kernels') {
      if (val === null) {
        if (a + 1 >= args.length) throw new UsageError(`missing value for ${name}`);
        val = args[++a];
      }
      if (name === '--min-time') {
        const t = /^[+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(val) ? Number(val) : NaN;
        if (!(t > 0) || !Number.isFinite(t)) {
          throw new UsageError(`--min-time needs a positive number of seconds, got: ${val}`);
        }
        o.minTime = t;
      } else {
        o.sel = Object.fromEntries(KERNELS.map((k) => [k, false]));
        for (const k of val.split(',')) {
          if (!KERNELS.includes(k)) {
            throw new UsageError(
              `unknown kernel in --kernels (expected fft,sor,mc,sparse,lu): ${val}`,
            );
          }
          o.sel[k] = true;
        }
      }
    } else throw new UsageError(`unknown argument: ${args[a]}`);
  }
  return o;
}

function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`scimark: ${e.message}\n${USAGE}`);
    return 2;
  }
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (o.selfTest) return selfTest();

  const sz = o.large ? SIZES.large : SIZES.default;
  const res = Object.fromEntries(KERNELS.map((k) => [k, newResult()]));
  try {
    verifyAll(sz, o.sel, res);
    if (!o.verifyOnly) timeAll(sz, o.sel, o.minTime, res);
  } catch (e) {
    process.stderr.write(`scimark: ${e.message}\n`);
    return 1;
  }
  const kernels = {};
  for (const k of KERNELS) if (o.sel[k]) kernels[k] = res[k];
  const all = KERNELS.every((k) => o.sel[k]);
  const composite =
    all && !o.verifyOnly ? KERNELS.reduce((acc, k) => acc + res[k].mflops, 0) / KERNELS.length : null;
  // JSON.stringify writes numbers with the shortest round-trip digits and
  // non-finite numbers as null.
  const out = {
    language: 'js',
    runtime: `node ${process.version}`,
    size: o.large ? 'large' : 'default',
    kernels,
    composite,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
  return 0;
}

process.exitCode = main();
