//! A two-node Slurm cluster on this machine, for the `--engine slurm` tests: munged
//! with a per-test key and socket, slurmctld, and two slurmd (`-N n1`, `-N n2`) on
//! their own ports of 127.0.0.1, all configured in a temp dir (Debian's slurm-wlm
//! 22.05 and munge; `proctrack/linuxproc`, `task/none`: no cgroups needed).
//!
//! [`Cluster`] is a guard: dropped — also when the test fails or panics — it kills
//! every daemon it started and then anything they left (job steps' `slurmstepd`,
//! their tasks, an srun: every process whose environment names this cluster's
//! `SLURM_CONF`), so nothing survives the test. Where the machine cannot run one (not
//! root, slurm or munge not on `PATH`) [`Cluster::start`] follows the rule of
//! `require`: a panic naming what is missing under `PERFLAB_REQUIRE`, else None with
//! the reason printed, and the test returns.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{require, wait_until};

/// The cluster's daemons; dropped: all killed, with what they left.
pub struct Cluster {
    pub dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

/// A TCP port on 127.0.0.1 free now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    /// Starts munged, slurmctld and two slurmd, and waits (at most 60 s) until `sinfo`
    /// shows both nodes idle; where this machine cannot, see `require` (a panic under
    /// `PERFLAB_REQUIRE`, else None with the reason printed).
    pub fn start() -> Option<Cluster> {
        if !require::root("the Slurm tests (slurmd and munged)")
            || !require::programs(&["munged", "slurmctld", "slurmd", "srun", "sinfo"])
        {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("perflab-slurm")
            .tempdir()
            .expect("temp dir");
        let mut cluster = Cluster {
            dir,
            daemons: Vec::new(),
        };
        let d = cluster.dir.path().to_path_buf();
        let key = d.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .expect("random key");
        std::fs::write(&key, &bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        let sock = d.join("munge.sock");
        cluster.spawn(
            "munged",
            Command::new("munged")
                .args(["-F", "--force"])
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", d.join("munged.pid").display()))
                .arg(format!("--log-file={}", d.join("munged.log").display()))
                .arg(format!("--seed-file={}", d.join("munged.seed").display())),
        );
        if !wait_until(Duration::from_secs(10), || sock.exists()) {
            panic!("munged made no socket: {}", cluster.log("munged.out"));
        }
        for sub in ["state", "spool/n1", "spool/n2"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        let (ctld, p1, p2) = (free_port(), free_port(), free_port());
        let conf = format!(
            "ClusterName=perflab{ctld}\nSlurmctldHost=localhost\nSlurmctldPort={ctld}\n\
             AuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\n\
             SlurmUser=root\nSlurmdUser=root\nStateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool/%n\nSlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd-%n.pid\nSlurmctldLogFile={d}/slurmctld.log\n\
             SlurmdLogFile={d}/slurmd-%n.log\nProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             MpiDefault=none\nReturnToService=2\nSchedulerType=sched/builtin\n\
             JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={p1} CPUs=1\n\
             NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port={p2} CPUs=1\n\
             PartitionName=test Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP\n",
            sock = sock.display(),
            d = d.display(),
        );
        std::fs::write(cluster.conf(), conf).unwrap();
        let mut ctld = cluster.slurm("slurmctld");
        cluster.spawn("slurmctld", ctld.args(["-D", "-i"]));
        for n in ["n1", "n2"] {
            let mut slurmd = cluster.slurm("slurmd");
            cluster.spawn(&format!("slurmd-{n}"), slurmd.args(["-D", "-N", n]));
        }
        let idle = wait_until(Duration::from_secs(60), || {
            let out = cluster
                .slurm("sinfo")
                .args(["-h", "-N", "-o", "%N %t"])
                .output();
            let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            let text = text.unwrap_or_default();
            ["n1 idle", "n2 idle"].iter().all(|n| text.contains(n))
        });
        if !idle {
            let sinfo = cluster.slurm("sinfo").output().map(|o| {
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr)
            });
            panic!(
                "the nodes are not idle within 60 s: sinfo: {sinfo:?}\nslurmctld: {}\n\
                 slurmd n1: {}\n{}",
                cluster.log("slurmctld.log"),
                cluster.log("slurmd-n1.log"),
                cluster.log("slurmd-n1.out")
            );
        }
        Some(cluster)
    }

    /// The cluster's slurm.conf (srun, sinfo and squeue need it as SLURM_CONF).
    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm command for this cluster.
    pub fn slurm(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        c
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) {
        let out = std::fs::File::create(self.dir.path().join(format!("{name}.out"))).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push(child);
    }

    /// The tail of a log file in the cluster's dir.
    pub fn log(&self, name: &str) -> String {
        let bytes = std::fs::read(self.dir.path().join(name)).unwrap_or_default();
        String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(2000)..]).into_owned()
    }

    /// The jobs `squeue` lists.
    pub fn jobs(&self) -> String {
        let out = self.slurm("squeue").args(["-h"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Whether every daemon still runs and both nodes answer (idle or allocated).
    pub fn healthy(&mut self) -> bool {
        if self
            .daemons
            .iter_mut()
            .any(|d| !matches!(d.try_wait(), Ok(None)))
        {
            return false;
        }
        let out = self
            .slurm("sinfo")
            .args(["-h", "-N", "-o", "%N %t"])
            .output();
        let text = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        ["n1 ", "n2 "].iter().all(|n| {
            text.lines()
                .any(|l| l.starts_with(n) && (l.ends_with("idle") || l.ends_with("alloc")))
        })
    }

    /// What jobs left on this cluster: [`Cluster::processes`] but slurmctld's own
    /// helper (`slurmscriptd`).
    pub fn leftovers(&self) -> Vec<(i32, String)> {
        let mut p = self.processes();
        p.retain(|(_, cmd)| !cmd.contains("slurmscriptd"));
        p
    }

    /// The processes (pid, command line) other than the daemons that belong to this
    /// cluster: their environment names its slurm.conf (slurmstepd, the tasks, srun,
    /// slurmctld's helper).
    pub fn processes(&self) -> Vec<(i32, String)> {
        let needle = format!("SLURM_CONF={}", self.conf().display()).into_bytes();
        let daemons: Vec<i32> = self.daemons.iter().map(|d| d.id() as i32).collect();
        let mut found = Vec::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return found;
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if daemons.contains(&pid) || pid == std::process::id() as i32 {
                continue;
            }
            let env = std::fs::read(p.path().join("environ")).unwrap_or_default();
            if env.split(|b| *b == 0).any(|v| v == needle.as_slice()) {
                let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                found.push((pid, cmd.trim().to_string()));
            }
        }
        found
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The daemons, slurmd first (SIGTERM: they clean up), then SIGKILL what is left.
        for d in self.daemons.iter().rev() {
            // SAFETY: signalling a child this guard started and has not reaped.
            unsafe { libc::kill(d.id() as i32, libc::SIGTERM) };
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        for d in self.daemons.iter_mut().rev() {
            while std::time::Instant::now() < deadline && matches!(d.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = d.kill();
            let _ = d.wait();
        }
        // What they left: job steps, tasks, an srun of a failed test.
        for _ in 0..3 {
            let left = self.processes();
            if left.is_empty() {
                break;
            }
            for (pid, _) in &left {
                // SAFETY: a process of this test's cluster (its environment says so).
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
