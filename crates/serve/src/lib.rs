//! perflab-serve: an event-driven HTTP/1.1 server to measure against, and to embed.
//!
//! N worker threads, each with its own epoll loop; four accept strategies
//! ([`Strategy`]) to demonstrate the accept() thundering herd and its cures; static
//! files with an open-file cache (small files from memory, large ones with `sendfile`),
//! validators and ranges; a precomputed `hello` mode for load
//! tests; a dynamic [`Handler`] callback; and a C ABI (see `include/perflab_serve.h`).
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
//! loops) → `conn` (one connection) → `parse` (request head) → `dispatch` (who
//! answers) → `hello` / `filecache` + `files` (+ `path`, `mime`, `listing`) / handler
//! → `response`.

mod accept;
mod clock;
mod config;
mod conn;
mod dispatch;
mod error;
pub mod ffi;
mod filecache;
mod files;
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
mod worker;

pub use config::{default_workers, Builder, Config, Strategy};
pub use error::ServeError;
pub use filecache::FileCacheConfig;
pub use hello::HELLO_BODY;
pub use request::{Handler, Request};
pub use response::{reason, Response};
pub use server::{Server, ServerHandle, Stats};
