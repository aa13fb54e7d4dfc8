//! The HTTP/1.1 side of a client connection, whatever moves its bytes: the requests in
//! flight (a FIFO, since HTTP/1.1 answers in order, pipelined or not), the response
//! parser, and the window `start..end` of unparsed bytes in the connection's read
//! buffer. Shared by the readiness-driven connection (`epoll::conn`)
//! and the completion-driven one (`uring::conn`), so framing, `Connection: close`,
//! bodies that run until the close and closed-early errors behave the same on both.
//!
//! The read buffer itself stays with the connection (or, for io_uring, with the ring,
//! which must own it while a receive is in flight): the methods borrow it.

use crate::conn::{ErrorKind, Progress, Sent};
use crate::parse::{Completed, ResponseParser, MAX_HEAD};
use std::collections::VecDeque;

/// Initial read buffer; grows to hold a head up to 64 KiB when one needs it.
pub(crate) const INITIAL_BUF: usize = 16 * 1024;

/// Requests in flight and the parse state of their responses.
#[derive(Debug)]
pub(crate) struct Exchange {
    parser: ResponseParser,
    /// Requests written (or being written) and not yet answered, oldest first.
    pub in_flight: VecDeque<Sent>,
    /// The server announced (or did) a close: no more requests on this socket.
    pub closing: bool,
    /// Unparsed bytes are `buf[start..end]`.
    pub start: usize,
    pub end: usize,
}

impl Exchange {
    pub fn new(pipeline: usize) -> Self {
        Exchange {
            parser: ResponseParser::default(),
            in_flight: VecDeque::with_capacity(pipeline.max(1)),
            closing: false,
            start: 0,
            end: 0,
        }
    }

    /// `n` requests sent as one write (a pipelined batch when `n > 1`).
    pub fn push(&mut self, sent: Sent, n: usize) {
        for _ in 0..n {
            self.in_flight.push_back(sent);
        }
    }

    /// Parses `buf[start..end]`; pushes completions to `done`.
    pub fn process(
        &mut self,
        buf: &[u8],
        done: &mut Vec<(Sent, Completed)>,
    ) -> Result<(), ErrorKind> {
        while self.start < self.end {
            let Some(front) = self.in_flight.front() else {
                return Err(ErrorKind::Malformed); // bytes nobody asked for
            };
            let head = front.head;
            let (n, complete) = self
                .parser
                .feed(&buf[self.start..self.end], head)
                .map_err(|_| ErrorKind::Malformed)?;
            self.start += n;
            match complete {
                Some(c) => {
                    let sent = self.in_flight.pop_front().expect("front checked above");
                    done.push((sent, c));
                    if c.close {
                        self.closing = true;
                        self.start = self.end; // anything after a closing response is ignored
                    }
                }
                None => break,
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(())
    }

    /// Makes room at the end of `buf`: compacts a partial head to the front, and grows
    /// the buffer (once) for heads larger than the initial size.
    pub fn make_room(&mut self, buf: &mut Vec<u8>) {
        if self.end < buf.len() {
            return;
        }
        if self.start > 0 {
            buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        } else if buf.len() < MAX_HEAD + 1024 {
            buf.resize(MAX_HEAD + 1024, 0);
        }
    }

    /// The peer closed its side. A body that runs until the close is complete; requests
    /// still unanswered (or a request still being written, `writing`) failed.
    pub fn on_eof(
        &mut self,
        done: &mut Vec<(Sent, Completed)>,
        writing: bool,
    ) -> Result<Progress, ErrorKind> {
        if let Some(c) = self.parser.eof() {
            if let Some(sent) = self.in_flight.pop_front() {
                done.push((sent, c));
            }
        }
        self.closing = true;
        if self.in_flight.is_empty() && !writing {
            if done.is_empty() {
                return Ok(Progress::ClosedIdle);
            }
            return Ok(Progress::Moved);
        }
        Err(ErrorKind::Closed)
    }

    /// Forgets the socket's state; returns the requests that were in flight.
    pub fn reset(&mut self) -> usize {
        let n = self.in_flight.len();
        self.in_flight.clear();
        self.closing = false;
        self.parser.reset();
        self.start = 0;
        self.end = 0;
        n
    }
}
