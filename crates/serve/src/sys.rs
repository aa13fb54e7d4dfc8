//! Thin, safe wrappers over the Linux system calls the server is built on: epoll,
//! eventfd, listening sockets with `SO_REUSEPORT`, `accept4`, `read`/`write`/`send`,
//! and `sendfile`.
//!
//! Why libc and not `mio`: the accept strategies are the point of this crate, and
//! `EPOLLEXCLUSIVE` (the `exclusive` strategy) is a raw `epoll_ctl` flag that mio does
//! not expose; mio also registers everything edge-triggered, while this server uses
//! level-triggered interest with one `read` per readiness event (as nginx does with
//! its "read less than asked → not ready" rule), which saves the extra `read` that
//! edge triggering needs to reach `EAGAIN`. `SO_REUSEPORT` and `sendfile` need libc
//! anyway. Every `unsafe` block here is a single system call on owned descriptors.

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// Readable / writable / error bits of an epoll event.
pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;
pub const EV_EXCLUSIVE: u32 = libc::EPOLLEXCLUSIVE as u32;

/// An epoll instance.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the returned descriptor is owned from here on.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: fd was just returned by the kernel and is not owned elsewhere.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev lives across the call; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(drop)
    }

    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }

    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits for events; `None` blocks indefinitely. EINTR reads as zero events.
    pub fn wait(
        &self,
        events: &mut [libc::epoll_event],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let ms = match timeout {
            None => -1,
            // Round up so a 0.4 ms timer doesn't spin with timeout 0.
            Some(d) => d.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32,
        };
        let max = events.len().min(i32::MAX as usize) as i32;
        // SAFETY: the buffer is valid for `max` events.
        let r = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), events.as_mut_ptr(), max, ms) };
        match cvt(r) {
            Ok(n) => Ok(n as usize),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// An eventfd used to wake a worker out of `epoll_wait`.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        Ok(EventFd {
            // SAFETY: fresh descriptor.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64. A full counter (EAGAIN) still wakes.
        unsafe { libc::write(self.raw(), (&one as *const u64).cast(), 8) };
    }
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64.
        unsafe { libc::read(self.raw(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// Converts a socket address to the C form; returns the storage and its length.
fn to_sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Converts a C socket address back; unknown families read as 0.0.0.0:0.
fn from_sockaddr(storage: &libc::sockaddr_storage) -> SocketAddr {
    match storage.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(storage as *const _ as *const libc::sockaddr_in) };
            let ip = Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            SocketAddr::V4(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let s = unsafe { &*(storage as *const _ as *const libc::sockaddr_in6) };
            let ip = Ipv6Addr::from(s.sin6_addr.s6_addr);
            SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(s.sin6_port),
                s.sin6_flowinfo,
                s.sin6_scope_id,
            ))
        }
        _ => SocketAddr::from(([0, 0, 0, 0], 0)),
    }
}

fn set_int_opt(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a live c_int and its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// When a listening socket gets `SO_REUSEPORT`, which decides whether its `bind` can
/// join sockets already on the port (see `accept.rs` for why the first socket of a
/// server binds alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortReuse {
    /// Never: the port is this socket's alone.
    No,
    /// Set after `bind` and before `listen`: the bind fails with `EADDRINUSE` if any
    /// socket holds the port, yet the server's own later sockets can join this one.
    AfterBind,
    /// Set before `bind`: joins a `SO_REUSEPORT` group of the same user on the port.
    BeforeBind,
}

/// A non-blocking listening socket with `SO_REUSEADDR` (and `SO_REUSEPORT` as `reuse`
/// says).
pub fn listen(addr: &SocketAddr, reuse: PortReuse, backlog: u32) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: plain syscall; ownership taken immediately.
    let fd = unsafe { OwnedFd::from_raw_fd(cvt(libc::socket(family, ty, 0))?) };
    let raw = fd.as_raw_fd();
    set_int_opt(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuse == PortReuse::BeforeBind {
        set_int_opt(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    if addr.is_ipv6() {
        set_int_opt(raw, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, 1)?;
    }
    let (storage, len) = to_sockaddr(addr);
    // SAFETY: storage is a valid sockaddr of `len` bytes.
    cvt(unsafe { libc::bind(raw, (&storage as *const libc::sockaddr_storage).cast(), len) })?;
    if reuse == PortReuse::AfterBind {
        set_int_opt(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    let backlog = backlog.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: plain syscall.
    cvt(unsafe { libc::listen(raw, backlog) })?;
    Ok(fd)
}

/// A non-blocking unix-domain listening socket at `path`. A socket file left by a server
/// that is gone (nothing accepts on it) is replaced; one that answers, or any other
/// file, is an error.
pub fn listen_unix(path: &std::path::Path, backlog: u32) -> io::Result<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a file that is not a socket is in the way",
            ));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another server accepts on this socket",
            ));
        }
        std::fs::remove_file(path)?;
    }
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all-zero is a valid value.
    let mut sun: libc::sockaddr_un = unsafe { mem::zeroed() };
    if bytes.len() >= sun.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the path is longer than {} bytes", sun.sun_path.len() - 1),
        ));
    }
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in sun.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: plain syscall; ownership taken immediately.
    let fd = unsafe { OwnedFd::from_raw_fd(cvt(libc::socket(libc::AF_UNIX, ty, 0))?) };
    let len = mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    // SAFETY: sun is a valid sockaddr_un and `len` covers the path and its NUL.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sun as *const libc::sockaddr_un).cast(),
            len as libc::socklen_t,
        )
    })?;
    let backlog = backlog.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: plain syscall.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), backlog) })?;
    Ok(fd)
}

/// The address a socket is bound to.
pub fn local_addr(fd: RawFd) -> io::Result<SocketAddr> {
    // SAFETY: zeroed storage is valid; the kernel fills at most `len` bytes.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: storage and len are live and sized.
    cvt(unsafe {
        libc::getsockname(
            fd,
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    })?;
    Ok(from_sockaddr(&storage))
}

/// Accepts one connection, non-blocking, close-on-exec, with `TCP_NODELAY` set.
pub fn accept(listener: RawFd) -> io::Result<(OwnedFd, SocketAddr)> {
    // SAFETY: zeroed storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: storage and len are live and sized.
    let fd = cvt(unsafe {
        libc::accept4(
            listener,
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
            flags,
        )
    })?;
    // SAFETY: fresh descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Responses are written whole; Nagle would only delay a header sent before a
    // sendfile body, so it is off.
    let _ = set_int_opt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    Ok((fd, from_sockaddr(&storage)))
}

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) })
}

/// `send` with `MSG_NOSIGNAL` (no SIGPIPE) and optionally `MSG_MORE` (a body follows).
pub fn send(fd: RawFd, buf: &[u8], more: bool) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    // SAFETY: buf is valid for buf.len() bytes.
    cvt_size(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) })
}

/// `sendmsg` of two buffers in one call (a head and a body kept elsewhere), with
/// `MSG_NOSIGNAL`: no copy into a staging buffer first.
pub fn send2(fd: RawFd, a: &[u8], b: &[u8]) -> io::Result<usize> {
    let mut iov = [
        libc::iovec {
            iov_base: a.as_ptr() as *mut libc::c_void,
            iov_len: a.len(),
        },
        libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        },
    ];
    // SAFETY: msghdr is plain data, zeroed then pointed at two live iovecs whose
    // buffers outlive the call; the kernel only reads them.
    let n = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = 2;
        libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL)
    };
    cvt_size(n)
}

/// `sendfile` from `file` at `*offset`, advancing it.
pub fn sendfile(sock: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: off is a live off_t; descriptors are owned by the caller.
    let n = cvt_size(unsafe { libc::sendfile(sock, file, &mut off, count) })?;
    *offset = off as u64;
    Ok(n)
}

/// Half-closes the sending side (lingering close: the peer sees our response, then EOF).
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: plain syscall; failure (already closed by peer) is harmless.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}

pub fn would_block(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_round_trip() {
        for a in ["127.0.0.1:8080", "[::1]:443", "[fe80::1%2]:1"] {
            let addr: SocketAddr = a.parse().unwrap();
            let (s, _) = to_sockaddr(&addr);
            assert_eq!(from_sockaddr(&s), addr);
        }
    }

    #[test]
    fn listen_on_os_chosen_port() {
        let fd = listen(&"127.0.0.1:0".parse().unwrap(), PortReuse::AfterBind, 16).unwrap();
        let a = local_addr(fd.as_raw_fd()).unwrap();
        assert_ne!(a.port(), 0);
        let again = listen(&a, PortReuse::BeforeBind, 16).unwrap();
        assert_eq!(local_addr(again.as_raw_fd()).unwrap(), a);
    }

    #[test]
    fn a_port_bound_alone_refuses_every_later_bind_that_does_not_ask_to_join() {
        let first = listen(&"127.0.0.1:0".parse().unwrap(), PortReuse::AfterBind, 16).unwrap();
        let a = local_addr(first.as_raw_fd()).unwrap();
        for reuse in [PortReuse::No, PortReuse::AfterBind] {
            let err = listen(&a, reuse, 16).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{reuse:?}: {err}");
        }
        let alone = listen(&"127.0.0.1:0".parse().unwrap(), PortReuse::No, 16).unwrap();
        let b = local_addr(alone.as_raw_fd()).unwrap();
        let err = listen(&b, PortReuse::BeforeBind, 16).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse, "{err}");
    }
}
