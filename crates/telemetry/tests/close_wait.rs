//! A helper that never closes accepted connections leaves server-side sockets in
//! CLOSE_WAIT once the clients close; the sampler must count them for this process.
//! Both ways of listing sockets are checked: netlink (what the sampler uses on the live
//! system) and the /proc/net/tcp{,6} text tables (its fallback). Alone in its test
//! binary, so no other test's sockets are counted for this pid.

use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use perflab_telemetry::{sockets, Probe, Sampler, SamplerSpec};

const N: usize = 5;

#[test]
fn close_wait_sockets_are_counted_for_their_owner() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The leaky server: accepts and keeps every connection open.
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let keep = held.clone();
    let server = std::thread::spawn(move || {
        for _ in 0..N {
            let (s, _) = listener.accept().unwrap();
            keep.lock().unwrap().push(s);
        }
    });
    // Clients connect and close at once: the server side gets their FIN.
    for _ in 0..N {
        drop(TcpStream::connect(addr).unwrap());
    }
    server.join().unwrap();

    let me = std::process::id() as i32;
    let mut sampler = Sampler::new(SamplerSpec {
        probes: vec![Probe::Sockets],
        pid: Some(me),
        ..SamplerSpec::system()
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let (mine, total) = loop {
        let s = sampler.sample();
        let sock = s.sockets.expect("sockets figures");
        let mine = sock.close_wait_by_pid.get(&me).copied().unwrap_or(0);
        if mine >= N as u64 || Instant::now() > deadline {
            break (s.process_close_wait.unwrap(), sock.close_wait());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(mine, N as u64, "CLOSE_WAIT sockets of pid {me}");
    assert!(total >= N as u64, "host-wide CLOSE_WAIT {total}");
    assert_eq!(held.lock().unwrap().len(), N);
    assert!(
        sampler.notes().warnings.is_empty(),
        "{:?}",
        sampler.notes().warnings
    );

    // The /proc/net/tcp{,6} text path (the fallback) sees the same sockets as netlink.
    let mut rows = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(t) = std::fs::read_to_string(f) {
            rows.extend(sockets::parse_tcp(f, &t).unwrap());
        }
    }
    let (mut counts, inodes) = sockets::count_states(&rows);
    let my_fds = std::fs::read_dir("/proc/self/fd").unwrap().filter_map(|e| {
        let link = std::fs::read_link(e.ok()?.path()).ok()?;
        Some((me, sockets::socket_inode(link.to_str()?)?))
    });
    sockets::attribute(&mut counts, &inodes, my_fds);
    assert_eq!(counts.close_wait_by_pid.get(&me), Some(&(N as u64)));

    // Closing them (the fix for the leak) empties the count.
    held.lock().unwrap().clear();
    let s = sampler.sample();
    assert_eq!(s.process_close_wait, Some(0));
}
