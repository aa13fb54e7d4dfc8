/*
 * perflab SciMark 2 kernels in Java.
 *
 * Written from the specification in docs/scimark.md (issue 6): the same random
 * numbers, the same data order and the same arithmetic order as the C, Rust, Go,
 * JavaScript and Python programs beside it, so that the verification pass gives
 * the same checksums in every language. Java 17 floating point is strict IEEE
 * (JEP 306) and never fuses a*b+c, so no special care is needed.
 *
 * Layout: matrices are arrays of rows (double[][]), as the reference Java does.
 *
 * Build and run: javac -d out Scimark.java && java -cp out Scimark [flags]
 */

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

public final class Scimark {

    // ------------------------------------------------------------------
    // Random numbers: subtractive lagged Fibonacci, 17-entry table.

    static final class Rng {
        private static final int M1 = 2147483647; // 2^31 - 1
        private final int[] m = new int[17];
        private int i = 4;
        private int j = 16;
        private final double dm1 = 1.0 / (double) M1;

        /** The seed must be nonzero (the program only uses 101010 and 113). */
        Rng(long seed) {
            long s = Math.abs(seed);
            if (s > M1) s = M1;
            if (s % 2 == 0) s -= 1;
            int x = (int) s;
            for (int k = 0; k < 17; k++) {
                x = stepSeed(x);
                m[k] = x;
            }
        }

        /** 9069 * x mod 2^31 without overflowing 32-bit ints: 16-bit halves. */
        private static int stepSeed(int x) {
            int lo = x & 0xFFFF;
            int hi = x >> 16;
            int p = 9069 * lo;
            int h = ((p >> 16) + 9069 * hi) & 0x7FFF;
            return (h << 16) | (p & 0xFFFF);
        }

        double next() {
            int k = m[i] - m[j];
            if (k < 0) k += M1;
            m[j] = k;
            i = (i == 0) ? 16 : i - 1;
            j = (j == 0) ? 16 : j - 1;
            return k * dm1;
        }

        double[] vector(int n) {
            double[] v = new double[n];
            for (int k = 0; k < n; k++) v[k] = next();
            return v;
        }

        double[][] matrix(int rows, int cols) {
            double[][] a = new double[rows][];
            for (int r = 0; r < rows; r++) a[r] = vector(cols);
            return a;
        }

        void skip(long n) {
            for (long k = 0; k < n; k++) next();
        }
    }

    // ------------------------------------------------------------------
    // FFT

    static int log2Exact(int n) {
        int k = 0;
        while ((1 << k) < n) k++;
        return ((1 << k) == n) ? k : -1;
    }

    static void fftBitReverse(int n, double[] d) {
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

    /** In-place radix-2 transform; direction -1 forward, +1 inverse (unnormalized). */
    static void fftTransform(int n, double[] d, int direction) {
        if (n <= 1) return;
        int logn = log2Exact(n);
        fftBitReverse(n, d);
        int dual = 1;
        for (int bit = 0; bit < logn; bit++, dual *= 2) {
            double wr = 1.0, wi = 0.0;
            double theta = 2.0 * direction * Math.PI / (2.0 * (double) dual);
            double s = Math.sin(theta);
            double t = Math.sin(theta / 2.0);
            double s2 = 2.0 * t * t;
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

    static void fftForward(int n, double[] d) {
        fftTransform(n, d, -1);
    }

    static void fftInverse(int n, double[] d) {
        fftTransform(n, d, +1);
        double norm = 1.0 / (double) n;
        for (int i = 0; i < 2 * n; i++) d[i] *= norm;
    }

    static double fftFlops(int n, long cycles) {
        double nd = n, logn = log2Exact(n);
        return ((5.0 * nd - 2.0) * logn + 2.0 * (nd + 1.0)) * (double) cycles;
    }

    // ------------------------------------------------------------------
    // SOR

    static final double SOR_OMEGA = 1.25;

    static void sorExecute(int m, int n, double omega, double[][] g, long cycles) {
        double omegaOverFour = omega * 0.25;
        double oneMinusOmega = 1.0 - omega;
        for (long p = 0; p < cycles; p++) {
            for (int i = 1; i < m - 1; i++) {
                double[] gi = g[i];
                double[] gim1 = g[i - 1];
                double[] gip1 = g[i + 1];
                for (int j = 1; j < n - 1; j++) {
                    gi[j] = omegaOverFour * (gim1[j] + gip1[j] + gi[j - 1] + gi[j + 1])
                            + oneMinusOmega * gi[j];
                }
            }
        }
    }

    static double sorFlops(int m, int n, long cycles) {
        return (double) (m - 1) * (double) (n - 1) * (double) cycles * 6.0;
    }

    // ------------------------------------------------------------------
    // Monte Carlo

    static final int MC_SEED = 113;

    static long mcCount(long samples) {
        Rng r = new Rng(MC_SEED);
        long inside = 0;
        for (long s = 0; s < samples; s++) {
            double x = r.next();
            double y = r.next();
            if (x * x + y * y <= 1.0) inside++;
        }
        return inside;
    }

    static double mcEstimate(long inside, long samples) {
        return 4.0 * (double) inside / (double) samples;
    }

    // ------------------------------------------------------------------
    // Sparse matrix-vector product (compressed rows)

    static final class Sparse {
        final int n, nz; // nz = actual entries = (requested / n) * n
        final int[] row, col;
        double[] val;

        Sparse(int n, int nzRequested) {
            int nr = nzRequested / n;
            this.n = n;
            this.nz = nr * n;
            row = new int[n + 1];
            col = new int[nz];
            for (int r = 0; r < n; r++) {
                int step = Math.max(1, r / nr);
                row[r + 1] = row[r] + nr;
                for (int i = 0; i < nr; i++) col[row[r] + i] = i * step;
            }
        }
    }

    static void sparseMatmult(int n, double[] y, double[] val, int[] row, int[] col, double[] x,
            long cycles) {
        for (long p = 0; p < cycles; p++) {
            for (int r = 0; r < n; r++) {
                double sum = 0.0;
                int end = row[r + 1];
                for (int i = row[r]; i < end; i++) sum += x[col[i]] * val[i];
                y[r] = sum;
            }
        }
    }

    static double sparseFlops(int nz, long cycles) {
        return (double) nz * 2.0 * (double) cycles;
    }

    // ------------------------------------------------------------------
    // LU factorization with partial pivoting

    /** Returns false if the matrix is singular. */
    static boolean luFactor(int n, double[][] a, int[] pivot) {
        for (int j = 0; j < n; j++) {
            int jp = j;
            double t = Math.abs(a[j][j]);
            for (int i = j + 1; i < n; i++) {
                double ab = Math.abs(a[i][j]);
                if (ab > t) {
                    jp = i;
                    t = ab;
                }
            }
            pivot[j] = jp;
            if (a[jp][j] == 0.0) return false;
            if (jp != j) {
                double[] tmp = a[j];
                a[j] = a[jp];
                a[jp] = tmp;
            }
            if (j < n - 1) {
                double recp = 1.0 / a[j][j];
                for (int k = j + 1; k < n; k++) a[k][j] *= recp;
                double[] aj = a[j];
                for (int ii = j + 1; ii < n; ii++) {
                    double[] aii = a[ii];
                    double aiij = aii[j];
                    for (int jj = j + 1; jj < n; jj++) aii[jj] -= aiij * aj[jj];
                }
            }
        }
        return true;
    }

    static void luSolve(int n, double[][] lu, int[] pivot, double[] x) {
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

    static void matrixCopy(double[][] dst, double[][] src) {
        for (int i = 0; i < src.length; i++) System.arraycopy(src[i], 0, dst[i], 0, src[i].length);
    }

    static double luFlops(int n, long cycles) {
        double nd = n;
        return 2.0 * nd * nd * nd / 3.0 * (double) cycles;
    }

    // ------------------------------------------------------------------
    // Sizes, results

    static final String[] KERNELS = {"fft", "sor", "mc", "sparse", "lu"};
    static final int K_FFT = 0, K_SOR = 1, K_MC = 2, K_SPARSE = 3, K_LU = 4;

    static final class Sizes {
        final int fftN, sorM, sorN, sparseN, sparseNz, luN;

        Sizes(int fftN, int sorM, int sorN, int sparseN, int sparseNz, int luN) {
            this.fftN = fftN;
            this.sorM = sorM;
            this.sorN = sorN;
            this.sparseN = sparseN;
            this.sparseNz = sparseNz;
            this.luN = luN;
        }
    }

    static final Sizes DEFAULT = new Sizes(1024, 100, 100, 1000, 5000, 100);
    static final Sizes LARGE = new Sizes(1048576, 1000, 1000, 100000, 1000000, 1000);

    static final class Result {
        boolean timed;
        double mflops, seconds, cpuSeconds;
        long cycles;
        double checksum;
        final List<String[]> checks = new ArrayList<>(); // name, JSON value

        void check(String name, double v) {
            checks.add(new String[] {name, jsonDouble(v)});
        }

        void check(String name, long v) {
            checks.add(new String[] {name, Long.toString(v)});
        }

        void check(String name, int[] v) {
            StringBuilder sb = new StringBuilder("[");
            for (int i = 0; i < v.length; i++) {
                if (i > 0) sb.append(',');
                sb.append(v[i]);
            }
            checks.add(new String[] {name, sb.append(']').toString()});
        }
    }

    static double sum(double[] v) {
        double s = 0.0;
        for (double x : v) s += x;
        return s;
    }

    static double sum(double[][] a) {
        double s = 0.0;
        for (double[] row : a)
            for (double x : row) s += x;
        return s;
    }

    // ------------------------------------------------------------------
    // Verification pass

    static final int VERIFY_SOR_SWEEPS = 10;
    static final long VERIFY_MC_SAMPLES = 1_000_000L;

    static void verifyAll(Sizes sz, boolean[] sel, Result[] res) {
        Rng r = new Rng(101010);

        if (sel[K_FFT]) {
            int n = sz.fftN;
            double[] x = r.vector(2 * n);
            double[] y = x.clone();
            fftForward(n, y);
            res[K_FFT].checksum = sum(y);
            fftInverse(n, y);
            double diff = 0.0;
            for (int i = 0; i < 2 * n; i++) {
                double d = y[i] - x[i];
                diff += d * d;
            }
            res[K_FFT].check("n", n);
            res[K_FFT].check("rms_error", Math.sqrt(diff / (2.0 * n)));
        } else {
            r.skip(2L * sz.fftN);
        }

        if (sel[K_SOR]) {
            double[][] g = r.matrix(sz.sorM, sz.sorN);
            sorExecute(sz.sorM, sz.sorN, SOR_OMEGA, g, VERIFY_SOR_SWEEPS);
            res[K_SOR].checksum = sum(g);
            res[K_SOR].check("m", sz.sorM);
            res[K_SOR].check("n", sz.sorN);
            res[K_SOR].check("sweeps", VERIFY_SOR_SWEEPS);
        } else {
            r.skip((long) sz.sorM * sz.sorN);
        }

        if (sel[K_MC]) {
            long inside = mcCount(VERIFY_MC_SAMPLES);
            res[K_MC].checksum = mcEstimate(inside, VERIFY_MC_SAMPLES);
            res[K_MC].check("samples", VERIFY_MC_SAMPLES);
            res[K_MC].check("inside", inside);
        }

        Sparse sp = new Sparse(sz.sparseN, sz.sparseNz);
        if (sel[K_SPARSE]) {
            double[] x = r.vector(sp.n);
            sp.val = r.vector(sp.nz);
            double[] y = new double[sp.n];
            sparseMatmult(sp.n, y, sp.val, sp.row, sp.col, x, 1);
            res[K_SPARSE].checksum = sum(y);
            res[K_SPARSE].check("n", sp.n);
            res[K_SPARSE].check("nz", sp.nz);
        } else {
            r.skip((long) sp.n + sp.nz);
        }

        if (sel[K_LU]) {
            int n = sz.luN;
            double[][] a = r.matrix(n, n);
            double[] b = r.vector(n);
            double[][] lu = new double[n][n];
            matrixCopy(lu, a);
            int[] pivot = new int[n];
            if (!luFactor(n, lu, pivot)) fail("LU matrix is singular");
            res[K_LU].checksum = sum(lu);
            double[] x = b.clone();
            luSolve(n, lu, pivot, x);
            double resid = 0.0;
            for (int i = 0; i < n; i++) {
                double s = 0.0;
                for (int j = 0; j < n; j++) s += a[i][j] * x[j];
                double d = Math.abs(s - b[i]);
                if (d > resid) resid = d;
            }
            res[K_LU].check("n", n);
            res[K_LU].check("pivot", pivot);
            res[K_LU].check("residual", resid);
        }
    }

    // ------------------------------------------------------------------
    // Timed pass

    interface Kernel {
        void run(long cycles);
    }

    static final com.sun.management.OperatingSystemMXBean OS_BEAN = osBean();

    static com.sun.management.OperatingSystemMXBean osBean() {
        Object b = ManagementFactory.getOperatingSystemMXBean();
        return (b instanceof com.sun.management.OperatingSystemMXBean)
                ? (com.sun.management.OperatingSystemMXBean) b
                : null;
    }

    static double cpuNow() {
        long ns = OS_BEAN == null ? -1 : OS_BEAN.getProcessCpuTime();
        return ns < 0 ? Double.NaN : ns * 1e-9;
    }

    static void calibrate(Kernel k, double minTime, Result res) {
        long cycles = 1;
        for (;;) {
            long w0 = System.nanoTime();
            double c0 = cpuNow();
            k.run(cycles);
            long w1 = System.nanoTime();
            double c1 = cpuNow();
            double secs = (w1 - w0) * 1e-9;
            if (secs >= minTime) {
                res.cycles = cycles;
                res.seconds = secs;
                res.cpuSeconds = c1 - c0;
                res.timed = true;
                return;
            }
            cycles *= 2;
        }
    }

    static volatile long mcSink;

    static void timeAll(Sizes sz, boolean[] sel, double minTime, Result[] res) {
        Rng r = new Rng(101010);
        int last = -1;
        for (int k = 0; k < KERNELS.length; k++) if (sel[k]) last = k;

        if (sel[K_FFT]) {
            int n = sz.fftN;
            double[] d = r.vector(2 * n);
            calibrate(cycles -> {
                for (long c = 0; c < cycles; c++) {
                    fftForward(n, d);
                    fftInverse(n, d);
                }
            }, minTime, res[K_FFT]);
            res[K_FFT].mflops = fftFlops(n, res[K_FFT].cycles) / res[K_FFT].seconds * 1e-6;
        } else if (last > K_FFT) {
            r.skip(2L * sz.fftN);
        }

        if (sel[K_SOR]) {
            double[][] g = r.matrix(sz.sorM, sz.sorN);
            calibrate(cycles -> sorExecute(sz.sorM, sz.sorN, SOR_OMEGA, g, cycles), minTime,
                    res[K_SOR]);
            res[K_SOR].mflops = sorFlops(sz.sorM, sz.sorN, res[K_SOR].cycles) / res[K_SOR].seconds
                    * 1e-6;
        } else if (last > K_SOR) {
            r.skip((long) sz.sorM * sz.sorN);
        }

        if (sel[K_MC]) {
            calibrate(cycles -> mcSink = mcCount(cycles), minTime, res[K_MC]);
            res[K_MC].mflops = (double) res[K_MC].cycles * 4.0 / res[K_MC].seconds * 1e-6;
        }

        if (last >= K_SPARSE) {
            Sparse sp = new Sparse(sz.sparseN, sz.sparseNz);
            if (sel[K_SPARSE]) {
                double[] x = r.vector(sp.n);
                sp.val = r.vector(sp.nz);
                double[] y = new double[sp.n];
                calibrate(cycles -> sparseMatmult(sp.n, y, sp.val, sp.row, sp.col, x, cycles),
                        minTime, res[K_SPARSE]);
                res[K_SPARSE].mflops = sparseFlops(sp.nz, res[K_SPARSE].cycles)
                        / res[K_SPARSE].seconds * 1e-6;
            } else if (last > K_SPARSE) {
                r.skip((long) sp.n + sp.nz);
            }
        }

        if (sel[K_LU]) {
            int n = sz.luN;
            double[][] a = r.matrix(n, n);
            double[][] lu = new double[n][n];
            int[] pivot = new int[n];
            calibrate(cycles -> {
                for (long c = 0; c < cycles; c++) {
                    matrixCopy(lu, a);
                    if (!luFactor(n, lu, pivot)) fail("LU matrix is singular");
                }
            }, minTime, res[K_LU]);
            res[K_LU].mflops = luFlops(n, res[K_LU].cycles) / res[K_LU].seconds * 1e-6;
        }
    }

    // ------------------------------------------------------------------
    // Output

    static String jsonDouble(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return "null";
        return Double.toString(v); // round-trip; "1.0E-5" is valid JSON
    }

    static String jsonString(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    static String toJson(boolean large, boolean[] sel, Result[] res, boolean verifyOnly) {
        String runtime = System.getProperty("java.vm.name") + " " + System.getProperty("java.version");
        StringBuilder sb = new StringBuilder();
        sb.append("{\"language\":\"java\",\"runtime\":").append(jsonString(runtime));
        sb.append(",\"size\":\"").append(large ? "large" : "default").append("\",\"kernels\":{");
        boolean first = true, all = true;
        double total = 0.0;
        for (int k = 0; k < KERNELS.length; k++) {
            if (!sel[k]) {
                all = false;
                continue;
            }
            Result r = res[k];
            if (!first) sb.append(',');
            first = false;
            sb.append('"').append(KERNELS[k]).append("\":{");
            sb.append("\"mflops\":").append(r.timed ? jsonDouble(r.mflops) : "null");
            sb.append(",\"cycles\":").append(r.timed ? Long.toString(r.cycles) : "null");
            sb.append(",\"seconds\":").append(r.timed ? jsonDouble(r.seconds) : "null");
            sb.append(",\"cpu_seconds\":").append(r.timed ? jsonDouble(r.cpuSeconds) : "null");
            sb.append(",\"checksum\":").append(jsonDouble(r.checksum));
            sb.append(",\"checks\":{");
            for (int c = 0; c < r.checks.size(); c++) {
                if (c > 0) sb.append(',');
                sb.append('"').append(r.checks.get(c)[0]).append("\":").append(r.checks.get(c)[1]);
            }
            sb.append("}}");
            total += r.mflops;
        }
        sb.append("},\"composite\":");
        sb.append(all && !verifyOnly ? jsonDouble(total / KERNELS.length) : "null");
        return sb.append('}').toString();
    }

    // ------------------------------------------------------------------
    // Self-test

    static int selfTest() {
        int failures = 0;
        Rng r = new Rng(101010);
        double[] first5 = {0.33525962398166753, 0.6972472442766872, 0.9718488529193443,
            0.9384686127018503, 0.39871413279264895};
        for (int k = 1; k <= 1000; k++) {
            double v = r.next();
            Double want = null;
            if (k <= 5) want = first5[k - 1];
            else if (k == 217) want = 0.01971507445895815;
            else if (k == 1000) want = 0.2497384516753901;
            if (want != null && v != want) {
                System.out.println("FAIL seed 101010 draw " + k + ": got " + v + " want " + want);
                failures++;
            }
        }
        double v = new Rng(113).next();
        if (v != 0.2915372323671064) {
            System.out.println("FAIL seed 113 draw 1: got " + v + " want 0.2915372323671064");
            failures++;
        }
        double mc = mcEstimate(mcCount(VERIFY_MC_SAMPLES), VERIFY_MC_SAMPLES);
        if (mc != 3.139796) {
            System.out.println("FAIL monte carlo 1e6 samples: got " + mc + " want 3.139796");
            failures++;
        }
        if (failures > 0) return 1;
        System.out.println("ok");
        return 0;
    }

    // ------------------------------------------------------------------
    // Command line

    static final String USAGE =
            "usage: java Scimark [--large] [--min-time SECONDS] [--verify-only]\n"
            + "                    [--kernels fft,sor,mc,sparse,lu] [--self-test]\n"
            + "Prints one line of JSON. Exit codes: 0 ok, 1 error or self-test failure, 2 usage.\n";

    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String msg) {
            super(msg);
        }
    }

    static void fail(String msg) {
        System.err.println("scimark: " + msg);
        System.exit(1);
    }

    static boolean[] parseKernels(String list) throws UsageError {
        boolean[] sel = new boolean[KERNELS.length];
        boolean any = false;
        for (String name : list.split(",", -1)) {
            boolean found = false;
            for (int k = 0; k < KERNELS.length; k++) {
                if (KERNELS[k].equals(name)) {
                    sel[k] = true;
                    found = true;
                    any = true;
                }
            }
            if (!found) {
                throw new UsageError(
                        "unknown kernel in --kernels (expected fft,sor,mc,sparse,lu): " + list);
            }
        }
        if (!any) throw new UsageError("--kernels needs at least one kernel");
        return sel;
    }

    public static void main(String[] args) {
        boolean large = false, verifyOnly = false, selfTest = false;
        double minTime = 2.0;
        boolean[] sel = {true, true, true, true, true};
        try {
            for (int a = 0; a < args.length; a++) {
                String arg = args[a];
                String val = null;
                int eq = arg.indexOf('=');
                if (arg.startsWith("--") && eq > 0) {
                    val = arg.substring(eq + 1);
                    arg = arg.substring(0, eq);
                }
                if (arg.equals("--large") && val == null) {
                    large = true;
                } else if (arg.equals("--verify-only") && val == null) {
                    verifyOnly = true;
                } else if (arg.equals("--self-test") && val == null) {
                    selfTest = true;
                } else if (arg.equals("--help") || arg.equals("-h")) {
                    System.out.print(USAGE);
                    return;
                } else if (arg.equals("--min-time") || arg.equals("--kernels")) {
                    if (val == null) {
                        if (a + 1 >= args.length) throw new UsageError("missing value for " + arg);
                        val = args[++a];
                    }
                    if (arg.equals("--min-time")) {
                        try {
                            minTime = Double.parseDouble(val);
                        } catch (NumberFormatException e) {
                            minTime = Double.NaN;
                        }
                        if (!(minTime > 0.0) || Double.isInfinite(minTime)) {
                            throw new UsageError(
                                    "--min-time needs a positive number of seconds, got: " + val);
                        }
                    } else {
                        sel = parseKernels(val);
                    }
                } else {
                    throw new UsageError("unknown argument: " + args[a]);
                }
            }
        } catch (UsageError e) {
            System.err.print("scimark: " + e.getMessage() + "\n" + USAGE);
            System.exit(2);
        }

        if (selfTest) System.exit(selfTest());

        Sizes sz = large ? LARGE : DEFAULT;
        Result[] res = new Result[KERNELS.length];
        for (int k = 0; k < res.length; k++) res[k] = new Result();
        verifyAll(sz, sel, res);
        if (!verifyOnly) timeAll(sz, sel, minTime, res);
        System.out.println(toJson(large, sel, res, verifyOnly));
    }
}
