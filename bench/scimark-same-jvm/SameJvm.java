// perflab's Java SciMark kernels against the reference jnt.scimark2 2.0a kernels in ONE JVM,
// kernel by kernel, back to back: the paired comparison behind
// `SAME_JVM=1 bench/scimark-vs-reference.sh` (see that script and docs/scimark.md).
//
// Why: run as separate programs, each JVM launch compiles and lays out the kernels its own
// way, and on a shared VM the host's other tenants come and go; the reference's own FFT
// ranged 1645-2907 MFLOPS over 14 launches here. Timing both programs' kernels in one JVM,
// one right after the other, and swapping which goes first every round, leaves both the
// same JIT, heap and neighbours, so the per-round ratio isolates the code.
//
// Each round: for every kernel, the reference's kernel.measureX(..) and perflab's
// Scimark.timeAll(..) restricted to that kernel, each calibrated to the minimum time as
// its own program does; the reference draws its data from one generator per round in the
// order its commandline.java does (FFT, SOR, MC, Sparse, LU), perflab's from its own
// (the same draws: both implement the same generator and order).
//
// Prints one line per measurement: "ROUND KERNEL ref|ours MFLOPS".
// Usage: java -cp REF_CLASSES:OURS_CLASSES:HARNESS_CLASSES SameJvm ROUNDS MIN_TIME

import jnt.scimark2.Constants;
import jnt.scimark2.Random;
import jnt.scimark2.kernel;

public class SameJvm {
    static final String[] KERNELS = {"fft", "sor", "mc", "sparse", "lu"};

    static double reference(int k, double minTime, Random r) {
        switch (k) {
            case 0: return kernel.measureFFT(Constants.FFT_SIZE, minTime, r);
            case 1: return kernel.measureSOR(Constants.SOR_SIZE, minTime, r);
            case 2: return kernel.measureMonteCarlo(minTime, r);
            case 3: return kernel.measureSparseMatmult(Constants.SPARSE_SIZE_M,
                    Constants.SPARSE_SIZE_nz, minTime, r);
            default: return kernel.measureLU(Constants.LU_SIZE, minTime, r);
        }
    }

    static double ours(int k, double minTime) {
        boolean[] sel = new boolean[KERNELS.length];
        sel[k] = true;
        Scimark.Result[] res = new Scimark.Result[KERNELS.length];
        for (int i = 0; i < res.length; i++) res[i] = new Scimark.Result();
        Scimark.timeAll(Scimark.DEFAULT, sel, minTime, res);
        return res[k].mflops;
    }

    public static void main(String[] args) {
        if (args.length != 2) {
            System.err.println("usage: SameJvm ROUNDS MIN_TIME");
            System.exit(2);
        }
        int rounds = Integer.parseInt(args[0]);
        double minTime = Double.parseDouble(args[1]);
        for (int round = 1; round <= rounds; round++) {
            Random r = new Random(Constants.RANDOM_SEED);
            for (int k = 0; k < KERNELS.length; k++) {
                boolean refFirst = round % 2 == 1;
                double a, b;
                if (refFirst) {
                    a = reference(k, minTime, r);
                    b = ours(k, minTime);
                } else {
                    b = ours(k, minTime);
                    a = reference(k, minTime, r);
                }
                System.out.println(round + " " + KERNELS[k] + " ref " + a);
                System.out.println(round + " " + KERNELS[k] + " ours " + b);
                System.out.flush();
            }
        }
    }
}
