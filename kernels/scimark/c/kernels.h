/*
 * kernels.h: the random number generator and the five SciMark kernels, for
 * scimark.c (the driver: verification, calibration, JSON). Everything is
 * static; the header is included by scimark.c only.
 *
 * Arithmetic is written in exactly the order of the specification in
 * docs/scimark.md, so that every language gets the same bits.
 */
#ifndef PERFLAB_SCIMARK_KERNELS_H
#define PERFLAB_SCIMARK_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF /* clang contracts within expressions by default */
#endif

static const double PI = 3.14159265358979323846;

/* ------------------------------------------------------------------ */
/* Random numbers: subtractive lagged Fibonacci, 17-entry table.       */

#define RNG_M1 2147483647 /* 2^31 - 1 */

typedef struct {
    int32_t m[17];
    int i, j;
    double dm1;
} Rng;

/* 9069 * x mod 2^31 for 0 <= x < 2^31, never overflowing 32-bit signed ints:
 * split x into 16-bit halves. */
static int32_t rng_step_seed(int32_t x) {
    int32_t lo = x & 0xFFFF;
    int32_t hi = x >> 16;                          /* < 2^15 */
    int32_t p = 9069 * lo;                         /* < 2^30 */
    int32_t h = ((p >> 16) + 9069 * hi) & 0x7FFF; /* high 15 bits */
    return (h << 16) | (p & 0xFFFF);
}

/* The seed must be nonzero (the program only uses 101010 and 113). */
static void rng_init(Rng *r, int64_t seed) {
    int64_t s = seed < 0 ? -seed : seed;
    if (s > RNG_M1) s = RNG_M1;
    if (s % 2 == 0) s -= 1;
    int32_t x = (int32_t)s;
    for (int k = 0; k < 17; k++) {
        x = rng_step_seed(x);
        r->m[k] = x;
    }
    r->i = 4;
    r->j = 16;
    r->dm1 = 1.0 / (double)RNG_M1;
}

static inline double rng_next(Rng *r) {
    int i = r->i, j = r->j;
    int32_t k = r->m[i] - r->m[j];
    if (k < 0) k += RNG_M1;
    r->m[j] = k;
    r->i = (i == 0) ? 16 : i - 1;
    r->j = (j == 0) ? 16 : j - 1;
    return (double)k * r->dm1;
}

static void rng_fill(Rng *r, double *a, long n) {
    for (long k = 0; k < n; k++) a[k] = rng_next(r);
}

static void rng_skip(Rng *r, long n) {
    for (long k = 0; k < n; k++) (void)rng_next(r);
}

/* ------------------------------------------------------------------ */
/* Allocation helpers.                                                */

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "scimark: out of memory\n");
        exit(1);
    }
    return p;
}

static double **matrix_new(int m, int n) {
    double **a = xmalloc((size_t)m * sizeof(double *));
    double *block = xmalloc((size_t)m * (size_t)n * sizeof(double));
    for (int i = 0; i < m; i++) a[i] = block + (size_t)i * (size_t)n;
    return a;
}

static void matrix_free(double **a) {
    if (a) {
        free(a[0]);
        free(a);
    }
}

static double **matrix_random(int m, int n, Rng *r) {
    double **a = matrix_new(m, n);
    for (int i = 0; i < m; i++) rng_fill(r, a[i], n);
    return a;
}

static void matrix_copy(int m, int n, double **dst, double **src) {
    for (int i = 0; i < m; i++) memcpy(dst[i], src[i], (size_t)n * sizeof(double));
}

static double *vector_random(long n, Rng *r) {
    double *v = xmalloc((size_t)n * sizeof(double));
    rng_fill(r, v, n);
    return v;
}

/* ------------------------------------------------------------------ */
/* FFT                                                                */

static int log2_exact(int n) {
    int k = 0;
    while ((1 << k) < n) k++;
    return ((1 << k) == n) ? k : -1;
}

static void fft_bitreverse(int n, double *d) {
    int j = 0;
    for (int i = 0; i < n - 1; i++) {
        if (i < j) {
            double tr = d[2 * i], ti = d[2 * i + 1];
            d[2 * i] = d[2 * j];
            d[2 * i + 1] = d[2 * j + 1];
            d[2 * j] = tr;
            d[2 * j + 1] = ti;
        }
        int k = n >> 1;
        while (k <= j) {
            j -= k;
            k >>= 1;
        }
        j += k;
    }
}

/* In-place radix-2 transform of n complex points (interleaved re/im);
 * direction -1 forward, +1 inverse (unnormalized). */
static void fft_transform(int n, double *d, int direction) {
    if (n <= 1) return;
    int logn = log2_exact(n);
    fft_bitreverse(n, d);
    int dual = 1;
    for (int bit = 0; bit < logn; bit++, dual *= 2) {
        double wr = 1.0, wi = 0.0;
        double theta = 2.0 * direction * PI / (2.0 * (double)dual);
        double s = sin(theta);
        double t = sin(theta / 2.0);
        double s2 = 2.0 * t * t;
        /* a = 0: w = 1, no multiplication needed */
        for (int b = 0; b < n; b += 2 * dual) {
            int i = 2 * b, j = 2 * (b + dual);
            double wdr = d[j], wdi = d[j + 1];
            d[j] = d[i] - wdr;
            d[j + 1] = d[i + 1] - wdi;
            d[i] += wdr;
            d[i + 1] += wdi;
        }
        for (int a = 1; a < dual; a++) {
            double tmp = wr - s * wi - s2 * wr;
            wi = wi + s * wr - s2 * wi;
            wr = tmp;
            for (int b = 0; b < n; b += 2 * dual) {
                int i = 2 * (b + a), j = 2 * (b + a + dual);
                double zr = d[j], zi = d[j + 1];
                double wdr = wr * zr - wi * zi;
                double wdi = wr * zi + wi * zr;
                d[j] = d[i] - wdr;
                d[j + 1] = d[i + 1] - wdi;
                d[i] += wdr;
                d[i + 1] += wdi;
            }
        }
    }
}

static void fft_forward(int n, double *d) { fft_transform(n, d, -1); }

static void fft_inverse(int n, double *d) {
    fft_transform(n, d, +1);
    double norm = 1.0 / (double)n;
    for (int i = 0; i < 2 * n; i++) d[i] *= norm;
}

static double fft_flops(int n, long cycles) {
    double nd = n, logn = log2_exact(n);
    return ((5.0 * nd - 2.0) * logn + 2.0 * (nd + 1.0)) * (double)cycles;
}

/* ------------------------------------------------------------------ */
/* SOR                                                                */

static void sor_execute(int m, int n, double omega, double **g, long cycles) {
    double omega_over_four = omega * 0.25;
    double one_minus_omega = 1.0 - omega;
    for (long p = 0; p < cycles; p++) {
        for (int i = 1; i < m - 1; i++) {
            double *gi = g[i];
            const double *gim1 = g[i - 1];
            const double *gip1 = g[i + 1];
            for (int j = 1; j < n - 1; j++)
                gi[j] = omega_over_four * (gim1[j] + gip1[j] + gi[j - 1] + gi[j + 1]) +
                        one_minus_omega * gi[j];
        }
    }
}

static double sor_flops(int m, int n, long cycles) {
    return (double)(m - 1) * (double)(n - 1) * (double)cycles * 6.0;
}

/* ------------------------------------------------------------------ */
/* Monte Carlo                                                        */

#define MC_SEED 113

static long mc_count(long samples) {
    Rng r;
    rng_init(&r, MC_SEED);
    long inside = 0;
    for (long s = 0; s < samples; s++) {
        double x = rng_next(&r);
        double y = rng_next(&r);
        if (x * x + y * y <= 1.0) inside++;
    }
    return inside;
}

static double mc_estimate(long inside, long samples) {
    return 4.0 * (double)inside / (double)samples;
}

/* ------------------------------------------------------------------ */
/* Sparse matrix-vector product (compressed rows)                     */

typedef struct {
    int n, nz; /* nz = actual number of entries, (nz_requested / n) * n */
    int *row;  /* n + 1 */
    int *col;  /* nz */
    double *val;
} Sparse;

static void sparse_structure(Sparse *a, int n, int nz_requested) {
    int nr = nz_requested / n;
    a->n = n;
    a->nz = nr * n;
    a->row = xmalloc((size_t)(n + 1) * sizeof(int));
    a->col = xmalloc((size_t)a->nz * sizeof(int));
    a->row[0] = 0;
    for (int r = 0; r < n; r++) {
        int step = r / nr;
        if (step < 1) step = 1;
        a->row[r + 1] = a->row[r] + nr;
        for (int i = 0; i < nr; i++) a->col[a->row[r] + i] = i * step;
    }
    a->val = NULL;
}

static void sparse_free(Sparse *a) {
    free(a->row);
    free(a->col);
    free(a->val);
}

static void sparse_matmult(int n, double *y, const double *val, const int *row,
                           const int *col, const double *x, long cycles) {
    for (long p = 0; p < cycles; p++) {
        for (int r = 0; r < n; r++) {
            double sum = 0.0;
            int end = row[r + 1];
            for (int i = row[r]; i < end; i++) sum += x[col[i]] * val[i];
            y[r] = sum;
        }
    }
}

static double sparse_flops(int nz, long cycles) { return (double)nz * 2.0 * (double)cycles; }

/* ------------------------------------------------------------------ */
/* LU factorization with partial pivoting                            */

/* Returns 0, or 1 if the matrix is singular. */
static int lu_factor(int n, double **a, int *pivot) {
    for (int j = 0; j < n; j++) {
        int jp = j;
        double t = fabs(a[j][j]);
        for (int i = j + 1; i < n; i++) {
            double ab = fabs(a[i][j]);
            if (ab > t) {
                jp = i;
                t = ab;
            }
        }
        pivot[j] = jp;
        if (a[jp][j] == 0.0) return 1;
        if (jp != j) {
            double *tmp = a[j];
            a[j] = a[jp];
            a[jp] = tmp;
        }
        if (j < n - 1) {
            double recp = 1.0 / a[j][j];
            for (int k = j + 1; k < n; k++) a[k][j] *= recp;
            const double *aj = a[j];
            for (int ii = j + 1; ii < n; ii++) {
                double *aii = a[ii];
                double aiij = aii[j];
                for (int jj = j + 1; jj < n; jj++) aii[jj] -= aiij * aj[jj];
            }
        }
    }
    return 0;
}

/* Solve LU x = P b in place (x holds b on entry). */
static void lu_solve(int n, double **lu, const int *pivot, double *x) {
    for (int i = 0; i < n; i++) {
        int ip = pivot[i];
        double t = x[i];
        x[i] = x[ip];
        x[ip] = t;
    }
    for (int i = 1; i < n; i++) {
        double s = x[i];
        for (int j = 0; j < i; j++) s -= lu[i][j] * x[j];
        x[i] = s;
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = x[i];
        for (int j = i + 1; j < n; j++) s -= lu[i][j] * x[j];
        x[i] = s / lu[i][i];
    }
}

static double lu_flops(int n, long cycles) {
    double nd = n;
    return 2.0 * nd * nd * nd / 3.0 * (double)cycles;
}

#endif /* PERFLAB_SCIMARK_KERNELS_H */
