//! perflab-serve: an event-driven HTTP/1.1 and HTTP/2 server to measure against, and
//! to embed.
//!
//! N worker threads, each with its own epoll loop; four accept strategies
//! ([`Strategy`]) to demonstrate the accept() thundering herd and its cures; static
//! files with an open-file cache (small files from memory, large ones with `sendfile`),
//! validators and ranges; a precomputed `hello` mode for load
//! tests; a dynamic [`Handler`] callback; and a C ABI (see `include/perflab_serve.h`).
//! HTTP/2 is h2c with prior knowledge on the same port as HTTP/1.1 (told apart per
//! connection) and, with [`Builder::tls`], h2 over TLS by ALPN (see `docs/serve.md`).
//!
//! ```no_run
//! use perflab_serve::{Response, Server, Strategy};
//! let mut server = Server::builder()
//!     .root("./public")
//!     .workers(2)
//!     .accept(Strategy::Reuseport)
//!     .handler(|req| (req.path() == "/api").then(|| Response::text("dynamic\n")))
//!     .bind("127.0.0.1:0")
//!     .start()?;
//! println!("listening on http://{}/", server.local_addr());
//! server.stop()?;
//! # Ok::<(), perflab_serve::ServeError>(())
//! ```
//!
//! Module map: `config` (settings) → `server` (start/stop) → `accept` + `worker` (event
//! loops) → `conn` (one connection, over `transport`: plain or `tls`; HTTP/2 in `h2`)
//! → `parse` (request head) → `dispatch` (who answers) → `hello` / `filecache` +
//! `files` (+ `path`, `mime`, `listing`) / handler → `response`.

mod accept;
mod clock;
mod config;
mod conn;
mod dispatch;
mod error;
pub mod ffi;
mod filecache;
mod files;
mod h2;
mod hello;
pub mod listing;
mod log;
mod mime;
pub mod parse;
pub mod path;
mod request;
mod response;
mod server;
mod slab;
mod sys;
mod tls;
mod transport;
mod worker;

pub use config::{default_workers, Builder, Config, Rate, Strategy, TlsFiles};
pub use error::ServeError;
pub use filecache::FileCacheConfig;
pub use h2::DEFAULT_CONTROL_RATE as DEFAULT_H2_CONTROL_RATE;
pub use h2::DEFAULT_MAX_CONTINUATIONS as DEFAULT_H2_MAX_CONTINUATIONS;
pub use h2::DEFAULT_MAX_STREAMS as DEFAULT_H2_MAX_STREAMS;
pub use h2::DEFAULT_RESET_RATE as DEFAULT_H2_RESET_RATE;
pub use hello::HELLO_BODY;
pub use request::{Handler, Request};
pub use response::{reason, Response};
pub use server::{Server, ServerHandle, Stats};
