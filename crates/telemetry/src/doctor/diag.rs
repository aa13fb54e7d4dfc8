//! Listening and CLOSE_WAIT TCP sockets with their queues, by netlink (sock_diag).
//!
//! For a listening socket the kernel's `inet_diag_msg` carries the accept queue:
//! `idiag_rqueue` is the number of connections waiting for accept() (`sk_ack_backlog`)
//! and `idiag_wqueue` the backlog they may reach (`sk_max_ack_backlog`, the listen()
//! argument already capped at net.core.somaxconn) — what `ss -lnt` prints as Recv-Q and
//! Send-Q. A listener whose queue has reached its backlog drops the handshakes that
//! complete next (TcpExt.ListenOverflows): that is how the doctor names the port.
//!
//! The dump itself is [`crate::sock_diag::dump`]; the doctor asks for two states only
//! (LISTEN and CLOSE_WAIT), so it stays small on busy hosts.
//! /proc/net/tcp is the fallback: it shows the accept-queue length of a listener in its
//! rx_queue column but not the backlog.

use std::io;

use crate::error::ParseError;

/// Kernel state numbers (`include/net/tcp_states.h`).
pub const TCP_CLOSE_WAIT: u8 = 8;
pub const TCP_LISTEN: u8 = 10;

/// One socket as the doctor needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagSocket {
    pub state: u8,
    pub local_port: u16,
    pub inode: u64,
    /// Listener: connections waiting for accept(). Others: bytes not yet read.
    pub rqueue: u64,
    /// Listener: the backlog (`None` when read from /proc/net/tcp, which lacks it).
    pub wqueue: Option<u64>,
}

/// LISTEN and CLOSE_WAIT sockets of this network namespace, IPv4 and IPv6, with their
/// queues (one netlink dump through [`crate::sock_diag`]).
pub fn dump() -> io::Result<Vec<DiagSocket>> {
    let mask = (1u32 << TCP_LISTEN) | (1u32 << TCP_CLOSE_WAIT);
    Ok(crate::sock_diag::dump(mask)?
        .into_iter()
        .map(|r| DiagSocket {
            state: r.state,
            local_port: r.local_port,
            inode: r.inode,
            rqueue: r.rqueue,
            wqueue: Some(r.wqueue),
        })
        .collect())
}

/// The LISTEN and CLOSE_WAIT rows of /proc/net/tcp or tcp6, with the rx_queue column
/// (a listener's accept-queue length); the backlog is not in these files.
pub fn parse_proc_tcp(file: &str, text: &str) -> Result<Vec<DiagSocket>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let bad = |what: &str| ParseError::new(file, Some(i + 1), what.to_string());
        if f.len() < 10 {
            return Err(bad("expected at least 10 columns"));
        }
        let state = u8::from_str_radix(f[3], 16).map_err(|_| bad("bad state"))?;
        if state != TCP_LISTEN && state != TCP_CLOSE_WAIT {
            continue;
        }
        let local_port = f[1]
            .rsplit_once(':')
            .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
            .ok_or_else(|| bad("bad local address"))?;
        let rqueue = f[4]
            .split_once(':')
            .and_then(|(_, r)| u64::from_str_radix(r, 16).ok())
            .ok_or_else(|| bad("bad tx_queue:rx_queue"))?;
        let inode = f[9].parse::<u64>().map_err(|_| bad("bad inode"))?;
        out.push(DiagSocket {
            state,
            local_port,
            inode,
            rqueue,
            wqueue: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_tcp_rows() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000041 00:00000000 00000000  1000        0 11 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 08 00000000:00000001 00:00000000 00000000  1000        0 12 1 0 20 4 0 10 -1\n\
   2: 0100007F:C352 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 13 3 0\n";
        let v = parse_proc_tcp("/proc/net/tcp", t).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].local_port, v[0].rqueue, v[0].wqueue),
            (8080, 65, None)
        );
        assert_eq!((v[1].state, v[1].inode), (TCP_CLOSE_WAIT, 12));
        assert!(parse_proc_tcp("/proc/net/tcp", "h\n 0: x y 0A\n").is_err());
    }

    #[test]
    fn a_listener_of_this_process_has_its_backlog() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let Ok(all) = dump() else {
            // Netlink refused (sandbox): the /proc/net/tcp fallback covers this host.
            return;
        };
        let me = all
            .iter()
            .find(|s| s.local_port == port && s.state == TCP_LISTEN)
            .expect("our listener");
        assert_eq!(me.rqueue, 0);
        assert!(me.wqueue.unwrap() > 0);
    }
}
