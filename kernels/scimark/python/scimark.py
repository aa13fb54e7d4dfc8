#!/usr/bin/env python3
"""perflab SciMark 2 kernels in pure Python (standard library only).

Written from the specification in docs/scimark.md (issue 6): the same random
numbers, the same data order and the same arithmetic order as the C, Java,
Rust, Go and JavaScript programs beside it. Python floats are IEEE doubles and
CPython evaluates a*b+c as two rounded operations, so the checksums agree bit
for bit. Sums are explicit loops: the builtin sum() of floats is compensated
(Neumaier) from Python 3.12 on and would change the last bits.

Layout: vectors are lists of floats; matrices are lists of rows.

It is slow (that is the point of having it); `--min-time` calibration applies
as in every other language.

Run: python3 scimark.py [--large] [--min-time S] [--verify-only] [--kernels ..]
"""

import json
import math
import platform
import sys
import time

# ---------------------------------------------------------------------------
# Random numbers: subtractive lagged Fibonacci, 17-entry table.

M1 = 2147483647  # 2^31 - 1


def step_seed(x):
    """9069 * x mod 2^31, computed in 16-bit halves as the 32-bit languages do
    (Python integers cannot overflow, so this equals (9069 * x) % 2**31)."""
    lo = x & 0xFFFF
    hi = x >> 16
    p = 9069 * lo
    h = ((p >> 16) + 9069 * hi) & 0x7FFF
    return (h << 16) | (p & 0xFFFF)


class Rng:
    """The seed must be nonzero (the program only uses 101010 and 113)."""

    __slots__ = ("m", "i", "j", "dm1")

    def __init__(self, seed):
        s = min(abs(seed), M1)
        if s % 2 == 0:
            s -= 1
        m = []
        x = s
        for _ in range(17):
            x = step_seed(x)
            m.append(x)
        self.m = m
        self.i = 4
        self.j = 16
        self.dm1 = 1.0 / M1

    def next(self):
        i = self.i
        j = self.j
        m = self.m
        k = m[i] - m[j]
        if k < 0:
            k += M1
        m[j] = k
        self.i = 16 if i == 0 else i - 1
        self.j = 16 if j == 0 else j - 1
        return k * self.dm1

    def vector(self, n):
        """n draws; the generator loop is inlined here for speed."""
        m = self.m
        i = self.i
        j = self.j
        dm1 = self.dm1
        out = [0.0] * n
        for idx in range(n):
            k = m[i] - m[j]
            if k < 0:
                k += M1
            m[j] = k
            i = 16 if i == 0 else i - 1
            j = 16 if j == 0 else j - 1
            out[idx] = k * dm1
        self.i = i
        self.j = j
        return out

    def matrix(self, rows, cols):
        return [self.vector(cols) for _ in range(rows)]

    def skip(self, n):
        self.vector(n)


# ---------------------------------------------------------------------------
# FFT


def log2_exact(n):
    k = 0
    while (1 << k) < n:
        k += 1
    return k if (1 << k) == n else -1


def fft_bitreverse(n, d):
    j = 0
    for i in range(n - 1):
        if i < j:
            d[2 * i], d[2 * j] = d[2 * j], d[2 * i]
            d[2 * i + 1], d[2 * j + 1] = d[2 * j + 1], d[2 * i + 1]
        k = n >> 1
        while k <= j:
            j -= k
            k >>= 1
        j += k


def fft_transform(n, d, direction):
    """In-place radix-2 transform; direction -1 forward, +1 inverse (unnormalized)."""
    if n <= 1:
        return
    logn = log2_exact(n)
    fft_bitreverse(n, d)
    sin = math.sin
    dual = 1
    for _ in range(logn):
        wr = 1.0
        wi = 0.0
        theta = 2.0 * direction * math.pi / (2.0 * dual)
        s = sin(theta)
        t = sin(theta / 2.0)
        s2 = 2.0 * t * t
        step = 4 * dual  # doubles per block of 2*dual points
        off = 2 * dual
        for i in range(0, 2 * n, step):
            j = i + off
            wdr = d[j]
            wdi = d[j + 1]
            d[j] = d[i] - wdr
            d[j + 1] = d[i + 1] - wdi
            d[i] += wdr
            d[i + 1] += wdi
        for a in range(1, dual):
            tmp = wr - s * wi - s2 * wr
            wi = wi + s * wr - s2 * wi
            wr = tmp
            for i in range(2 * a, 2 * n, step):
                j = i + off
                zr = d[j]
                zi = d[j + 1]
                wdr = wr * zr - wi * zi
                wdi = wr * zi + wi * zr
                di = d[i]
                di1 = d[i + 1]
                d[j] = di - wdr
                d[j + 1] = di1 - wdi
                d[i] = di + wdr
                d[i + 1] = di1 + wdi
        dual *= 2


def fft_forward(n, d):
    fft_transform(n, d, -1)


def fft_inverse(n, d):
    fft_transform(n, d, 1)
    norm = 1.0 / n
    for i in range(2 * n):
        d[i] *= norm


def fft_flops(n, cycles):
    return ((5.0 * n - 2.0) * log2_exact(n) + 2.0 * (n + 1.0)) * cycles


# ---------------------------------------------------------------------------
# SOR

SOR_OMEGA = 1.25


def sor_execute(m, n, omega, g, cycles):
    omega_over_four = omega * 0.25
    one_minus_omega = 1.0 - omega
    for _ in range(cycles):
        for i in range(1, m - 1):
            gi = g[i]
            gim1 = g[i - 1]
            gip1 = g[i + 1]
            left = gi[0]  # gi[j - 1], just written
            cur = gi[1]
            for j in range(1, n - 1):
                right = gi[j + 1]
                left = omega_over_four * (gim1[j] + gip1[j] + left + right) + one_minus_omega * cur
                gi[j] = left
                cur = right


def sor_flops(m, n, cycles):
    return (m - 1) * (n - 1) * cycles * 6.0


# ---------------------------------------------------------------------------
# Monte Carlo

MC_SEED = 113


def mc_count(samples):
    """The generator is inlined in the loop (same arithmetic as Rng.next)."""
    r = Rng(MC_SEED)
    m = r.m
    i = r.i
    j = r.j
    dm1 = r.dm1
    inside = 0
    for _ in range(samples):
        k = m[i] - m[j]
        if k < 0:
            k += M1
        m[j] = k
        i = 16 if i == 0 else i - 1
        j = 16 if j == 0 else j - 1
        x = k * dm1
        k = m[i] - m[j]
        if k < 0:
            k += M1
        m[j] = k
        i = 16 if i == 0 else i - 1
        j = 16 if j == 0 else j - 1
        y = k * dm1
        if x * x + y * y <= 1.0:
            inside += 1
    return inside


def mc_estimate(inside, samples):
    return 4.0 * inside / samples


# ---------------------------------------------------------------------------
# Sparse matrix-vector product, compressed rows


class Sparse:
    """The structure only; val is filled by the caller from the generator."""

    def __init__(self, n, nz_requested):
        nr = nz_requested // n
        self.n = n
        self.nz = nr * n  # actual entries
        self.row = [0] * (n + 1)
        self.col = [0] * self.nz
        self.val = None
        for r in range(n):
            step = max(1, r // nr)
            self.row[r + 1] = self.row[r] + nr
            for i in range(nr):
                self.col[self.row[r] + i] = i * step


def sparse_matmult(n, y, val, row, col, x, cycles):
    for _ in range(cycles):
        for r in range(n):
            s = 0.0
            for i in range(row[r], row[r + 1]):
                s += x[col[i]] * val[i]
            y[r] = s


def sparse_flops(nz, cycles):
    return nz * 2.0 * cycles


# ---------------------------------------------------------------------------
# LU with partial pivoting


def lu_factor(n, a, pivot):
    """Factors a (list of rows) in place; returns False if it is singular."""
    for j in range(n):
        jp = j
        t = abs(a[j][j])
        for i in range(j + 1, n):
            ab = abs(a[i][j])
            if ab > t:
                jp = i
                t = ab
        pivot[j] = jp
        if a[jp][j] == 0.0:
            return False
        if jp != j:
            a[j], a[jp] = a[jp], a[j]
        if j < n - 1:
            recp = 1.0 / a[j][j]
            for k in range(j + 1, n):
                a[k][j] *= recp
            aj = a[j][j + 1 :]
            for ii in range(j + 1, n):
                aii = a[ii]
                aiij = aii[j]
                # same arithmetic as aii[jj] -= aiij * aj[jj], one row at a time
                aii[j + 1 :] = [x - aiij * y for x, y in zip(aii[j + 1 :], aj)]
    return True


def lu_solve(n, lu, pivot, x):
    """Solves LU x = P b in place (x holds b on entry)."""
    for i in range(n):
        ip = pivot[i]
        x[i], x[ip] = x[ip], x[i]
    for i in range(1, n):
        s = x[i]
        row = lu[i]
        for j in range(i):
            s -= row[j] * x[j]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        row = lu[i]
        for j in range(i + 1, n):
            s -= row[j] * x[j]
        x[i] = s / row[i]


def lu_flops(n, cycles):
    return 2.0 * n * n * n / 3.0 * cycles


def fsum_plain(v):
    """Plain left-to-right sum (the checksums depend on the order)."""
    s = 0.0
    for x in v:
        s += x
    return s


def sum_matrix(a):
    s = 0.0
    for row in a:
        for x in row:
            s += x
    return s


# ---------------------------------------------------------------------------
# Sizes, verification, timing

KERNELS = ["fft", "sor", "mc", "sparse", "lu"]
SIZES = {
    "default": dict(fft_n=1024, sor_m=100, sor_n=100, sparse_n=1000, sparse_nz=5000, lu_n=100),
    "large": dict(
        fft_n=1048576, sor_m=1000, sor_n=1000, sparse_n=100000, sparse_nz=1000000, lu_n=1000
    ),
}
VERIFY_SOR_SWEEPS = 10
VERIFY_MC_SAMPLES = 1000000


def new_result():
    return dict(mflops=None, cycles=None, seconds=None, cpu_seconds=None, checksum=None, checks={})


class KernelError(Exception):
    pass


def verify_all(sz, sel, res):
    r = Rng(101010)

    if sel["fft"]:
        n = sz["fft_n"]
        x = r.vector(2 * n)
        y = list(x)
        fft_forward(n, y)
        res["fft"]["checksum"] = fsum_plain(y)
        fft_inverse(n, y)
        diff = 0.0
        for a, b in zip(y, x):
            d = a - b
            diff += d * d
        res["fft"]["checks"] = {"n": n, "rms_error": math.sqrt(diff / (2.0 * n))}
    else:
        r.skip(2 * sz["fft_n"])

    if sel["sor"]:
        m, n = sz["sor_m"], sz["sor_n"]
        g = r.matrix(m, n)
        sor_execute(m, n, SOR_OMEGA, g, VERIFY_SOR_SWEEPS)
        res["sor"]["checksum"] = sum_matrix(g)
        res["sor"]["checks"] = {"m": m, "n": n, "sweeps": VERIFY_SOR_SWEEPS}
    else:
        r.skip(sz["sor_m"] * sz["sor_n"])

    if sel["mc"]:
        inside = mc_count(VERIFY_MC_SAMPLES)
        res["mc"]["checksum"] = mc_estimate(inside, VERIFY_MC_SAMPLES)
        res["mc"]["checks"] = {"samples": VERIFY_MC_SAMPLES, "inside": inside}

    sp = Sparse(sz["sparse_n"], sz["sparse_nz"])
    if sel["sparse"]:
        x = r.vector(sp.n)
        sp.val = r.vector(sp.nz)
        y = [0.0] * sp.n
        sparse_matmult(sp.n, y, sp.val, sp.row, sp.col, x, 1)
        res["sparse"]["checksum"] = fsum_plain(y)
        res["sparse"]["checks"] = {"n": sp.n, "nz": sp.nz}
    else:
        r.skip(sp.n + sp.nz)

    if sel["lu"]:
        n = sz["lu_n"]
        a = r.matrix(n, n)
        b = r.vector(n)
        lu = [list(row) for row in a]
        pivot = [0] * n
        if not lu_factor(n, lu, pivot):
            raise KernelError("LU matrix is singular")
        res["lu"]["checksum"] = sum_matrix(lu)
        x = list(b)
        lu_solve(n, lu, pivot, x)
        resid = 0.0
        for i in range(n):
            s = 0.0
            for aij, xj in zip(a[i], x):
                s += aij * xj
            d = abs(s - b[i])
            if d > resid:
                resid = d
        res["lu"]["checks"] = {"n": n, "pivot": pivot, "residual": resid}


def calibrate(min_time, res, run):
    cycles = 1
    while True:
        c0 = time.process_time()
        w0 = time.perf_counter()  # monotonic
        run(cycles)
        secs = time.perf_counter() - w0
        c1 = time.process_time()
        if secs >= min_time:
            res["cycles"] = cycles
            res["seconds"] = secs
            res["cpu_seconds"] = c1 - c0
            return
        cycles *= 2


def time_all(sz, sel, min_time, res):
    r = Rng(101010)
    last = max(k for k, name in enumerate(KERNELS) if sel[name])

    if sel["fft"]:
        n = sz["fft_n"]
        d = r.vector(2 * n)

        def run_fft(cycles):
            for _ in range(cycles):
                fft_forward(n, d)
                fft_inverse(n, d)

        calibrate(min_time, res["fft"], run_fft)
        res["fft"]["mflops"] = fft_flops(n, res["fft"]["cycles"]) / res["fft"]["seconds"] * 1e-6
    elif last > 0:
        r.skip(2 * sz["fft_n"])

    if sel["sor"]:
        m, n = sz["sor_m"], sz["sor_n"]
        g = r.matrix(m, n)
        calibrate(min_time, res["sor"], lambda c: sor_execute(m, n, SOR_OMEGA, g, c))
        res["sor"]["mflops"] = sor_flops(m, n, res["sor"]["cycles"]) / res["sor"]["seconds"] * 1e-6
    elif last > 1:
        r.skip(sz["sor_m"] * sz["sor_n"])

    if sel["mc"]:
        calibrate(min_time, res["mc"], mc_count)
        res["mc"]["mflops"] = res["mc"]["cycles"] * 4.0 / res["mc"]["seconds"] * 1e-6

    if last >= 3:
        sp = Sparse(sz["sparse_n"], sz["sparse_nz"])
        if sel["sparse"]:
            x = r.vector(sp.n)
            sp.val = r.vector(sp.nz)
            y = [0.0] * sp.n
            calibrate(
                min_time,
                res["sparse"],
                lambda c: sparse_matmult(sp.n, y, sp.val, sp.row, sp.col, x, c),
            )
            res["sparse"]["mflops"] = (
                sparse_flops(sp.nz, res["sparse"]["cycles"]) / res["sparse"]["seconds"] * 1e-6
            )
        elif last > 3:
            r.skip(sp.n + sp.nz)

    if sel["lu"]:
        n = sz["lu_n"]
        a = r.matrix(n, n)
        pivot = [0] * n

        def run_lu(cycles):
            for _ in range(cycles):
                lu = [list(row) for row in a]  # the copy is part of each cycle
                if not lu_factor(n, lu, pivot):
                    raise KernelError("LU matrix is singular")

        calibrate(min_time, res["lu"], run_lu)
        res["lu"]["mflops"] = lu_flops(n, res["lu"]["cycles"]) / res["lu"]["seconds"] * 1e-6


# ---------------------------------------------------------------------------
# Self-test


def self_test():
    failures = []
    r = Rng(101010)
    want = {
        1: 0.33525962398166753,
        2: 0.6972472442766872,
        3: 0.9718488529193443,
        4: 0.9384686127018503,
        5: 0.39871413279264895,
        217: 0.01971507445895815,
        1000: 0.2497384516753901,
    }
    for k in range(1, 1001):
        v = r.next()
        if k in want and v != want[k]:
            failures.append(f"FAIL seed 101010 draw {k}: got {v!r} want {want[k]!r}")
    v = Rng(113).next()
    if v != 0.2915372323671064:
        failures.append(f"FAIL seed 113 draw 1: got {v!r} want 0.2915372323671064")
    mc = mc_estimate(mc_count(VERIFY_MC_SAMPLES), VERIFY_MC_SAMPLES)
    if mc != 3.139796:
        failures.append(f"FAIL monte carlo 1e6 samples: got {mc!r} want 3.139796")
    for f in failures:
        print(f)
    if failures:
        return 1
    print("ok")
    return 0


# ---------------------------------------------------------------------------
# Command line

USAGE = """usage: python3 scimark.py [--large] [--min-time SECONDS] [--verify-only]
                          [--kernels fft,sor,mc,sparse,lu] [--self-test]
Prints one line of JSON. Exit codes: 0 ok, 1 error or self-test failure, 2 usage.
"""


class UsageError(Exception):
    pass


def parse_args(args):
    o = dict(large=False, verify_only=False, self_test=False, help=False, min_time=2.0)
    o["sel"] = {k: True for k in KERNELS}
    a = 0
    while a < len(args):
        name, val = args[a], None
        if name.startswith("--") and "=" in name:
            name, val = name.split("=", 1)
        if name == "--large" and val is None:
            o["large"] = True
        elif name == "--verify-only" and val is None:
            o["verify_only"] = True
        elif name == "--self-test" and val is None:
            o["self_test"] = True
        elif name in ("--help", "-h"):
            o["help"] = True
        elif name in ("--min-time", "--kernels"):
            if val is None:
                if a + 1 >= len(args):
                    raise UsageError(f"missing value for {name}")
                a += 1
                val = args[a]
            if name == "--min-time":
                try:
                    t = float(val)
                except ValueError:
                    t = math.nan
                if not (t > 0) or math.isinf(t):
                    raise UsageError(f"--min-time needs a positive number of seconds, got: {val}")
                o["min_time"] = t
            else:
                sel = {k: False for k in KERNELS}
                for k in val.split(","):
                    if k not in sel:
                        raise UsageError(
                            f"unknown kernel in --kernels (expected fft,sor,mc,sparse,lu): {val}"
                        )
                    sel[k] = True
                o["sel"] = sel
        else:
            raise UsageError(f"unknown argument: {args[a]}")
        a += 1
    return o


def json_clean(v):
    """Non-finite floats become null (json.dumps would write NaN/Infinity)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_clean(x) for x in v]
    return v


def main(argv):
    try:
        o = parse_args(argv)
    except UsageError as e:
        sys.stderr.write(f"scimark: {e}\n{USAGE}")
        return 2
    if o["help"]:
        sys.stdout.write(USAGE)
        return 0
    if o["self_test"]:
        return self_test()

    size = "large" if o["large"] else "default"
    sz = SIZES[size]
    sel = o["sel"]
    res = {k: new_result() for k in KERNELS}
    try:
        verify_all(sz, sel, res)
        if not o["verify_only"]:
            time_all(sz, sel, o["min_time"], res)
    except KernelError as e:
        sys.stderr.write(f"scimark: {e}\n")
        return 1
    kernels = {k: res[k] for k in KERNELS if sel[k]}
    composite = None
    if all(sel.values()) and not o["verify_only"]:
        composite = 0.0
        for k in KERNELS:
            composite += res[k]["mflops"]
        composite /= len(KERNELS)
    out = {
        "language": "python",
        "runtime": f"{platform.python_implementation()} {platform.python_version()}",
        "size": size,
        "kernels": kernels,
        "composite": composite,
    }
    # json.dumps writes floats with repr(): the shortest round-trip digits
    print(json.dumps(json_clean(out), separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
