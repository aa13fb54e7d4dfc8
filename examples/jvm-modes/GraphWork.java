// The JVM-modes study's workload: build a large object graph on one thread, then work
// it from N threads. Pointer-heavy on purpose (every node holds references to its
// neighbours and a boxed payload), so the width of a reference — 4 bytes with
// compressed oops, 8 without — shows in the heap after a full GC and in the time it
// takes to walk the graph through the caches.
//
//   java GraphWork NODES THREADS STEPS
//
// Prints one line per figure, for perflab's regex metrics:
//   phase1_s 1.234          building the graph (single thread)
//   heap_after_gc_mb 456.7  heap in use after System.gc(), the graph alive
//   phase2_s 2.345          THREADS threads, each STEPS random-walk steps
//   checksum 1234567        proves the walks happened (same for every mode)
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

public final class GraphWork {
    static final class Node {
        final Node[] edges;
        final Long payload;
        final List<Node> back = new ArrayList<>(2);

        Node(long payload, int degree) {
            this.payload = payload;
            this.edges = new Node[degree];
        }
    }

    public static void main(String[] args) throws Exception {
        int nodes = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long steps = args.length > 2 ? Long.parseLong(args[2]) : 20_000_000L;
        if (nodes < 2 || threads < 1 || steps < 1) {
            System.err.println("usage: GraphWork NODES>=2 THREADS>=1 STEPS>=1");
            System.exit(2);
        }

        long t0 = System.nanoTime();
        SplittableRandom rnd = new SplittableRandom(42);
        Node[] graph = new Node[nodes];
        for (int i = 0; i < nodes; i++) {
            graph[i] = new Node(1000L + rnd.nextInt(1 << 20), 4);
        }
        for (Node n : graph) {
            for (int e = 0; e < n.edges.length; e++) {
                Node to = graph[rnd.nextInt(nodes)];
                n.edges[e] = to;
                if (to.back.size() < 2) {
                    to.back.add(n);
                }
            }
        }
        double phase1 = (System.nanoTime() - t0) / 1e9;
        System.out.printf("phase1_s %.4f%n", phase1);

        MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
        System.gc();
        System.gc();
        double heapMb = mem.getHeapMemoryUsage().getUsed() / 1e6;
        System.out.printf("heap_after_gc_mb %.1f%n", heapMb);

        long t1 = System.nanoTime();
        long[] sums = new long[threads];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int id = t;
            workers[t] = new Thread(() -> {
                SplittableRandom r = new SplittableRandom(1000 + id);
                Node at = graph[r.nextInt(nodes)];
                long sum = 0;
                for (long s = 0; s < steps; s++) {
                    sum += at.payload;
                    Node next = at.edges[r.nextInt(at.edges.length)];
                    at = (next.back.isEmpty() || (s & 7) != 0) ? next : next.back.get(0);
                }
                sums[id] = sum;
            });
            workers[t].start();
        }
        long checksum = 0;
        for (int t = 0; t < threads; t++) {
            workers[t].join();
            checksum += sums[t];
        }
        double phase2 = (System.nanoTime() - t1) / 1e9;
        System.out.printf("phase2_s %.4f%n", phase2);
        System.out.printf("checksum %d%n", checksum);
        // Keep the graph reachable until here, so the GC above measured it.
        if (graph[0] == null) {
            System.exit(1);
        }
    }
}
