//! `sockets`: TCP connections by state (/proc/net/tcp and /proc/net/tcp6) and the
//! processes that hold CLOSE_WAIT sockets.
//!
//! Each line of the tables has the state in hex in the 4th column and the socket's inode
//! in the 10th. A CLOSE_WAIT socket is one whose peer closed but whose owner never called
//! close(): a leak in the application. To name the owner, the inodes of the CLOSE_WAIT
//! sockets are looked up among the `socket:[INODE]` links of /proc/PID/fd/*. That walk
//! only happens when there is a CLOSE_WAIT socket at all, and processes whose fd
//! directory cannot be read (other users' without privileges) are skipped: their sockets
//! are then counted in the state totals but not attributed. A socket shared by several
//! processes (inherited across fork) is counted for each of them.
//!
//! On the live system the sockets come from one netlink dump ([`crate::sock_diag`]),
//! much cheaper than these text tables; the tables are the fallback and what the
//! fixtures test. Both give the same [`TcpSocket`] rows.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::error::ParseError;

/// TCP states, as numbered by the kernel (`include/net/tcp_states.h`).
pub const STATES: [&str; 12] = [
    "established",
    "syn_sent",
    "syn_recv",
    "fin_wait1",
    "fin_wait2",
    "time_wait",
    "close",
    "close_wait",
    "last_ack",
    "listen",
    "closing",
    "new_syn_recv",
];

/// Kernel number of CLOSE_WAIT.
pub const TCP_CLOSE_WAIT: u8 = 8;

/// One row of /proc/net/tcp or tcp6: what perflab needs of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSocket {
    /// Kernel state number, 1..=12 (see [`STATES`]).
    pub state: u8,
    /// Socket inode (0 for TIME_WAIT and request sockets, which belong to no file).
    pub inode: u64,
    pub local_port: u16,
}

/// Parses /proc/net/tcp or /proc/net/tcp6 (the header line is skipped).
pub fn parse_tcp(file: &str, text: &str) -> Result<Vec<TcpSocket>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < 10 {
            return Err(ParseError::new(
                file,
                Some(i + 1),
                format!("expected at least 10 columns, found {}", f.len()),
            ));
        }
        let bad = |what: &str| ParseError::new(file, Some(i + 1), what.to_string());
        let state = u8::from_str_radix(f[3], 16).map_err(|_| bad("bad state"))?;
        let local_port = f[1]
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            .ok_or_else(|| bad("bad local address"))?;
        let inode = f[9].parse::<u64>().map_err(|_| bad("bad inode"))?;
        out.push(TcpSocket {
            state,
            inode,
            local_port,
        });
    }
    Ok(out)
}

/// Connections by state, IPv4 and IPv6 together.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SocketCounts {
    /// Count per state, indexed by kernel state number − 1 (see [`STATES`]).
    pub by_state: [u64; 12],
    /// CLOSE_WAIT sockets per owning pid (only pids holding at least one).
    pub close_wait_by_pid: BTreeMap<i32, u64>,
    /// CLOSE_WAIT sockets whose owner could not be found (unreadable /proc/PID/fd).
    pub close_wait_unattributed: u64,
}

impl SocketCounts {
    /// Count of one state by its name in [`STATES`].
    pub fn state(&self, name: &str) -> u64 {
        STATES
            .iter()
            .position(|s| *s == name)
            .map(|i| self.by_state[i])
            .unwrap_or(0)
    }
    pub fn established(&self) -> u64 {
        self.by_state[0]
    }
    pub fn time_wait(&self) -> u64 {
        self.by_state[5]
    }
    pub fn close_wait(&self) -> u64 {
        self.by_state[7]
    }
    pub fn listen(&self) -> u64 {
        self.by_state[9]
    }
    /// CLOSE_WAIT sockets held by any of `pids`.
    pub fn close_wait_of(&self, pids: &[i32]) -> u64 {
        pids.iter()
            .filter_map(|p| self.close_wait_by_pid.get(p))
            .sum()
    }
}

/// Counts by state; the inodes of the CLOSE_WAIT sockets are returned for attribution.
pub fn count_states(sockets: &[TcpSocket]) -> (SocketCounts, HashSet<u64>) {
    let mut c = SocketCounts::default();
    let mut close_wait = HashSet::new();
    for s in sockets {
        if (1..=12).contains(&s.state) {
            c.by_state[usize::from(s.state) - 1] += 1;
        }
        if s.state == TCP_CLOSE_WAIT && s.inode != 0 {
            close_wait.insert(s.inode);
        }
    }
    (c, close_wait)
}

/// The inode of a `/proc/PID/fd/N` link target if it is a socket: `socket:[12345]`.
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Attributes CLOSE_WAIT inodes to the pids whose fds point at them.
pub fn attribute(
    counts: &mut SocketCounts,
    close_wait: &HashSet<u64>,
    fds: impl IntoIterator<Item = (i32, u64)>,
) {
    let mut found = HashSet::new();
    for (pid, inode) in fds {
        if close_wait.contains(&inode) {
            *counts.close_wait_by_pid.entry(pid).or_insert(0) += 1;
            found.insert(inode);
        }
    }
    counts.close_wait_unattributed = (close_wait.len() - found.len()) as u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_attribution() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 11 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 08 00000000:00000001 00:00000000 00000000  1000        0 12 1 0 20 4 0 10 -1\n\
   2: 0100007F:1F90 0100007F:C351 08 00000000:00000001 00:00000000 00000000  1000        0 13 1 0 20 4 0 10 -1\n\
   3: 0100007F:C352 0100007F:1F90 06 00000000:00000000 03:00000F00 00000000     0        0 0 3 0\n";
        let socks = parse_tcp("/proc/net/tcp", t).unwrap();
        assert_eq!(socks[0].local_port, 8080);
        let (mut c, cw) = count_states(&socks);
        assert_eq!((c.listen(), c.close_wait(), c.time_wait()), (1, 2, 1));
        attribute(&mut c, &cw, [(10, 11), (10, 12), (20, 12), (30, 99)]);
        assert_eq!(c.close_wait_by_pid.get(&10), Some(&1));
        assert_eq!(c.close_wait_by_pid.get(&20), Some(&1));
        assert_eq!(c.close_wait_unattributed, 1);
        assert_eq!(c.close_wait_of(&[10, 20, 30]), 2);
        assert_eq!(c.state("close_wait"), 2);
    }

    #[test]
    fn fd_links() {
        assert_eq!(socket_inode("socket:[332042]"), Some(332042));
        assert_eq!(socket_inode("pipe:[332011]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn short_rows_are_errors() {
        let e = parse_tcp("/proc/net/tcp", "header\n 0: 0100007F:1F90 x 0A\n").unwrap_err();
        assert_eq!(e.line, Some(2));
    }
}
