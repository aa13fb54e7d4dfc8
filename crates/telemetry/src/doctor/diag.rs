//! Listening and CLOSE_WAIT TCP sockets with their queues, by netlink (sock_diag).
//!
//! For a listening socket the kernel's `inet_diag_msg` carries the accept queue:
//! `idiag_rqueue` is the number of connections waiting for accept() (`sk_ack_backlog`)
//! and `idiag_wqueue` the backlog they may reach (`sk_max_ack_backlog`, the listen()
//! argument already capped at net.core.somaxconn) — what `ss -lnt` prints as Recv-Q and
//! Send-Q. A listener whose queue has reached its backlog drops the handshakes that
//! complete next (TcpExt.ListenOverflows): that is how the doctor names the port.
//!
//! [`crate::sock_diag`] keeps only state, port and inode (all the `sockets` probe
//! needs); the doctor also needs the two queue fields and asks the kernel for two
//! states only (LISTEN and CLOSE_WAIT), so the dump stays small on busy hosts. The wire
//! format is the same legacy `TCPDIAG_GETSOCK` request and answer described there.
//! /proc/net/tcp is the fallback: it shows the accept-queue length of a listener in its
//! rx_queue column but not the backlog.

use std::io;

use crate::error::ParseError;

const NETLINK_INET_DIAG: libc::c_int = 4;
const TCPDIAG_GETSOCK: u16 = 18;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_HDRLEN: usize = 16;
/// `struct inet_diag_req`: family, src_len, dst_len, ext, sockid (48), states, dbs.
const REQ_LEN: usize = 60;
/// `struct inet_diag_msg` up to and including `idiag_inode`.
const MSG_LEN: usize = 72;

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

struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and close it once.
        unsafe { libc::close(self.0) };
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The request: TCP sockets of every family in the states of `mask` (bit N = state N).
fn request(seq: u32, mask: u32) -> [u8; NLMSG_HDRLEN + REQ_LEN] {
    let mut r = [0u8; NLMSG_HDRLEN + REQ_LEN];
    r[0..4].copy_from_slice(&((NLMSG_HDRLEN + REQ_LEN) as u32).to_ne_bytes());
    r[4..6].copy_from_slice(&TCPDIAG_GETSOCK.to_ne_bytes());
    r[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    r[8..12].copy_from_slice(&seq.to_ne_bytes());
    r[NLMSG_HDRLEN + 52..NLMSG_HDRLEN + 56].copy_from_slice(&mask.to_ne_bytes());
    r
}

/// Parses one datagram of the answer into `out`; `Ok(true)` once `NLMSG_DONE` is seen.
pub fn parse_messages(buf: &[u8], out: &mut Vec<DiagSocket>) -> io::Result<bool> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {what}"));
    let mut off = 0;
    while off + NLMSG_HDRLEN <= buf.len() {
        let u32_at = |o: usize| u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4 bytes"));
        let len = u32_at(off) as usize;
        let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
        if len < NLMSG_HDRLEN || off + len > buf.len() {
            return Err(bad("truncated message"));
        }
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = if len >= NLMSG_HDRLEN + 4 {
                    -(u32_at(off + NLMSG_HDRLEN) as i32)
                } else {
                    libc::EINVAL
                };
                return Err(io::Error::from_raw_os_error(errno));
            }
            _ => {
                if len < NLMSG_HDRLEN + MSG_LEN {
                    return Err(bad("short inet_diag_msg"));
                }
                let m = off + NLMSG_HDRLEN;
                out.push(DiagSocket {
                    state: buf[m + 1],
                    local_port: u16::from_be_bytes([buf[m + 4], buf[m + 5]]),
                    rqueue: u64::from(u32_at(m + 56)),
                    wqueue: Some(u64::from(u32_at(m + 60))),
                    inode: u64::from(u32_at(m + 68)),
                });
            }
        }
        off += (len + 3) & !3;
    }
    Ok(false)
}

/// LISTEN and CLOSE_WAIT sockets of this network namespace, IPv4 and IPv6.
pub fn dump() -> io::Result<Vec<DiagSocket>> {
    // SAFETY: plain socket(2); the descriptor is owned by `Fd`.
    let fd = Fd(check(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_INET_DIAG,
        )
    })?);
    let tv = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    // SAFETY: tv outlives the call; the length is its size.
    check(unsafe {
        libc::setsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    // SAFETY: an all-zero sockaddr_nl is valid; the kernel is address (pid 0).
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    let req = request(1, (1 << TCP_LISTEN) | (1 << TCP_CLOSE_WAIT));
    // SAFETY: req and addr are valid for the lengths given.
    let sent = unsafe {
        libc::sendto(
            fd.0,
            req.as_ptr().cast(),
            req.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "sock_diag: no answer",
            ));
        }
        if parse_messages(&buf[..n as usize], &mut out)? {
            out.retain(|s| s.state == TCP_LISTEN || s.state == TCP_CLOSE_WAIT);
            return Ok(out);
        }
    }
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

    fn msg(kind: u16, body: &[u8]) -> Vec<u8> {
        let len = (NLMSG_HDRLEN + body.len()) as u32;
        let mut m = Vec::new();
        m.extend_from_slice(&len.to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&[0; 10]);
        m.extend_from_slice(body);
        while m.len() % 4 != 0 {
            m.push(0);
        }
        m
    }

    #[test]
    fn parses_queues_of_a_listener() {
        let mut body = [0u8; MSG_LEN];
        body[0] = 2;
        body[1] = TCP_LISTEN;
        body[4..6].copy_from_slice(&8080u16.to_be_bytes());
        body[56..60].copy_from_slice(&65u32.to_ne_bytes());
        body[60..64].copy_from_slice(&64u32.to_ne_bytes());
        body[68..72].copy_from_slice(&777u32.to_ne_bytes());
        let mut buf = msg(20, &body);
        buf.extend(msg(NLMSG_DONE, &[0; 4]));
        let mut out = Vec::new();
        assert!(parse_messages(&buf, &mut out).unwrap());
        assert_eq!(
            out,
            [DiagSocket {
                state: TCP_LISTEN,
                local_port: 8080,
                inode: 777,
                rqueue: 65,
                wqueue: Some(64),
            }]
        );
        let err = msg(NLMSG_ERROR, &(-libc::EPERM).to_ne_bytes());
        assert_eq!(
            parse_messages(&err, &mut out).unwrap_err().raw_os_error(),
            Some(libc::EPERM)
        );
        assert!(parse_messages(&msg(20, &[0; 8]), &mut out).is_err());
    }

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
