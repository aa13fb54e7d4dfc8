use super::*;

/// A fake /proc and cgroup mount under a fresh directory: pid 42 in `cg_line`, the
/// mounts of `mountinfo` (with `{M}` standing for the mount directory).
struct Fake {
    dir: PathBuf,
}

impl Fake {
    fn new(tag: &str, cg_line: &str, mountinfo: &str) -> Fake {
        let dir = std::env::temp_dir().join(format!("cgcpu-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proc/42")).unwrap();
        std::fs::create_dir_all(dir.join("proc/self")).unwrap();
        std::fs::create_dir_all(dir.join("mnt")).unwrap();
        std::fs::write(dir.join("proc/42/cgroup"), cg_line).unwrap();
        let m = mountinfo.replace("{M}", dir.join("mnt").to_str().unwrap());
        std::fs::write(dir.join("proc/self/mountinfo"), m).unwrap();
        Fake { dir }
    }
    fn proc(&self) -> PathBuf {
        self.dir.join("proc")
    }
    fn write(&self, rel: &str, text: &str) {
        let p = self.dir.join("mnt").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const V1: &str = "30 25 0:27 / {M} rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n\
                  31 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
const V2: &str = "30 25 0:27 / {M} rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";

#[test]
fn v1_quota_is_the_tightest_on_the_path_and_throttling_is_read() {
    let f = Fake::new("v1", "5:memory:/x\n4:cpu,cpuacct:/a/b\n0::/\n", V1);
    f.write("a/cpu.cfs_quota_us", "50000\n");
    f.write("a/cpu.cfs_period_us", "100000\n");
    f.write("a/b/cpu.cfs_quota_us", "-1\n");
    f.write("a/b/cpu.cfs_period_us", "100000\n");
    f.write(
        "a/b/cpu.stat",
        "nr_periods 200\nnr_throttled 150\nthrottled_time 9000000000\n",
    );
    let q = read_quota(&f.proc(), 42).expect("the parent's quota");
    assert_eq!((q.quota_us, q.period_us, q.cpus), (50_000, 100_000, 0.5));
    assert!(q.file.ends_with("a/cpu.cfs_quota_us"), "{:?}", q.file);
    // A tighter quota in the process's own cgroup wins.
    f.write("a/b/cpu.cfs_quota_us", "1500\n");
    f.write("a/b/cpu.cfs_period_us", "10000\n");
    assert_eq!(read_quota(&f.proc(), 42).unwrap().cpus, 0.15);
    let t = read_throttling(&f.proc(), 42).unwrap();
    assert_eq!(
        (t.periods, t.throttled, t.throttled_ns),
        (200, 150, 9_000_000_000)
    );
    let later = Throttling {
        periods: 250,
        throttled: 190,
        throttled_ns: 9_500_000_000,
    };
    assert_eq!(later.since(&t).throttled, 40);
    assert_eq!(t.since(&later), Throttling::default());
}

#[test]
fn v2_reads_cpu_max_and_throttled_usec() {
    let f = Fake::new("v2", "0::/svc.slice/web.service\n", V2);
    f.write("svc.slice/cpu.max", "max 100000\n");
    f.write("svc.slice/web.service/cpu.max", "25000 100000\n");
    f.write(
        "svc.slice/web.service/cpu.stat",
        "usage_usec 1\nnr_periods 10\nnr_throttled 4\nthrottled_usec 1500\n",
    );
    let q = read_quota(&f.proc(), 42).unwrap();
    assert_eq!(q.cpus, 0.25);
    let t = read_throttling(&f.proc(), 42).unwrap();
    assert_eq!((t.periods, t.throttled, t.throttled_ns), (10, 4, 1_500_000));
}

#[test]
fn no_quota_no_controller_or_garbage_is_none() {
    let f = Fake::new("none", "0::/a\n", V2);
    f.write("a/cpu.max", "max 100000\n");
    assert_eq!(read_quota(&f.proc(), 42), None);
    f.write("a/cpu.max", "lots 100000\n");
    assert_eq!(read_quota(&f.proc(), 42), None);
    f.write("a/cpu.max", "0 100000\n");
    assert_eq!(read_quota(&f.proc(), 42), None);
    // A v1 host whose cpu controller is not mounted.
    let g = Fake::new(
        "nomount",
        "4:cpu:/a\n",
        V2.replace("cgroup2 cgroup2", "tmpfs tmpfs").as_str(),
    );
    assert_eq!(read_quota(&g.proc(), 42), None);
    assert_eq!(read_throttling(&g.proc(), 42), None);
    // A process that is gone.
    assert_eq!(read_quota(&f.proc(), 7), None);
    assert_eq!(parse_cpu_stat("usage_usec 5\n"), None);
}

#[test]
fn a_mount_inside_the_hierarchy_and_escaped_names() {
    // A container sees its own cgroup as the mount's root: the path in /proc/PID/cgroup
    // is under that root, and the mount point has a space in it.
    let mi = "30 25 0:27 /kubepods/pod1 {M} rw - cgroup cgroup rw,cpu\n";
    let f = Fake::new("nested", "3:cpu:/kubepods/pod1/c1\n", mi);
    f.write("c1/cpu.cfs_quota_us", "200000\n");
    f.write("c1/cpu.cfs_period_us", "100000\n");
    assert_eq!(read_quota(&f.proc(), 42).unwrap().cpus, 2.0);
    assert_eq!(unescape(r"/a\040b\134c"), r"/a b\c");
    assert_eq!(
        cpu_cgroup_path("2:cpuacct:/\n1:cpu:/x\n0::/y\n"),
        Some((false, "/x".to_string()))
    );
    assert_eq!(cpu_cgroup_path("0::/y\n"), Some((true, "/y".to_string())));
    assert_eq!(parse_cpu_max("50000"), Some((50_000, 100_000)));
}

#[test]
fn a_cgroup_outside_the_mounts_root_is_not_read_through_it() {
    // The mount shows /kubepods/pod1; the process is in /kubepods/pod10/c1, which only
    // shares a string prefix with it: its files are not under this mount at all.
    let mi = "30 25 0:27 /kubepods/pod1 {M} rw - cgroup cgroup rw,cpu\n";
    let f = Fake::new("sibling", "3:cpu:/kubepods/pod10/c1\n", mi);
    // What a string-prefix strip would have read: {M}/0/c1.
    f.write("0/c1/cpu.cfs_quota_us", "10000\n");
    f.write("0/c1/cpu.cfs_period_us", "100000\n");
    f.write(
        "0/c1/cpu.stat",
        "nr_periods 1\nnr_throttled 1\nthrottled_time 5\n",
    );
    assert_eq!(read_quota(&f.proc(), 42), None);
    assert_eq!(read_throttling(&f.proc(), 42), None);
}
