//! The smallest Rust embedding: a handler answers every request with a greeting.
//!
//! `cargo run -p perflab-serve --example hello -- [PORT]`; serves until stdin closes.

use perflab_serve::{Response, ServeError, Server, ServerHandle};

/// Starts the example server on 127.0.0.1:`port` (0: chosen by the OS).
pub fn start(port: u16) -> Result<ServerHandle, ServeError> {
    Server::builder()
        .workers(2)
        .handler(|req| {
            Some(Response::text(format!(
                "Hello from Rust! {} {}\n",
                req.method(),
                req.path()
            )))
        })
        .bind(("127.0.0.1", port))
        .start()
}

#[allow(dead_code)]
fn main() -> Result<(), ServeError> {
    let port = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let mut server = start(port)?;
    println!("listening on http://{}/", server.local_addr());
    // Serve until stdin reaches end of file.
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    server.stop()
}
