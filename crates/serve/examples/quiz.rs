//! An interactive HTML quiz on the embedding API: questions as forms, answers by
//! POST, the score kept per session cookie in the handler's own state.
//!
//! `cargo run -p perflab-serve --example quiz -- [PORT]`, then open the printed URL.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use perflab_serve::listing::html_escape;
use perflab_serve::{Request, Response, ServeError, Server, ServerHandle};

/// (question, choices, index of the right one)
pub const QUESTIONS: &[(&str, &[&str], usize)] = &[
    (
        "A socket sits in CLOSE_WAIT. Who has not closed it yet?",
        &["The remote peer", "This program", "The kernel"],
        1,
    ),
    (
        "Which accept strategy wakes every worker for every new connection?",
        &["reuseport", "exclusive", "shared"],
        2,
    ),
    (
        "What does nginx's accept_mutex serialize?",
        &[
            "accept() calls across workers",
            "writes to the access log",
            "sendfile",
        ],
        0,
    ),
];

#[derive(Debug, Default, Clone, Copy)]
struct Progress {
    next: usize,
    score: usize,
}

#[derive(Default)]
struct Quiz {
    sessions: Mutex<HashMap<String, Progress>>,
    ids: AtomicU64,
}

impl Quiz {
    fn new_session(&self) -> String {
        let n = self.ids.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let id = format!(
            "{:016x}",
            (t ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)).rotate_left(17)
        );
        self.sessions
            .lock()
            .unwrap()
            .insert(id.clone(), Progress::default());
        id
    }

    fn handle(&self, req: &Request<'_>) -> Option<Response> {
        let known = req
            .cookie("quiz")
            .filter(|id| self.sessions.lock().unwrap().contains_key(*id))
            .map(str::to_string);
        let (id, fresh) = match known {
            Some(id) => (id, false),
            None => (self.new_session(), true),
        };
        let resp = match (req.method(), req.path()) {
            ("GET", "/") => Response::html(self.page(&id)),
            ("POST", "/answer") => {
                self.answer(&id, req.body());
                Response::redirect(303, "/")
            }
            ("POST", "/reset") => {
                self.sessions
                    .lock()
                    .unwrap()
                    .insert(id.clone(), Progress::default());
                Response::redirect(303, "/")
            }
            _ => return None,
        };
        Some(if fresh {
            resp.header(
                "Set-Cookie",
                &format!("quiz={id}; Path=/; HttpOnly; SameSite=Strict"),
            )
        } else {
            resp
        })
    }

    fn answer(&self, id: &str, body: &[u8]) {
        let form = String::from_utf8_lossy(body);
        let field = |name: &str| {
            form.split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v.parse::<usize>().ok())
        };
        let mut sessions = self.sessions.lock().unwrap();
        let Some(p) = sessions.get_mut(id) else {
            return;
        };
        // Only the current question counts: a replayed form can't score twice.
        if let (Some(q), Some(a)) = (field("q"), field("a")) {
            if q == p.next && q < QUESTIONS.len() {
                p.score += usize::from(QUESTIONS[q].2 == a);
                p.next += 1;
            }
        }
    }

    fn page(&self, id: &str) -> String {
        let p = self
            .sessions
            .lock()
            .unwrap()
            .get(id)
            .copied()
            .unwrap_or_default();
        let mut html = String::from("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>perflab quiz</title></head><body>\n");
        if p.next >= QUESTIONS.len() {
            html.push_str(&format!(
                "<h1>Your score: {}/{}</h1>\n<form method=\"post\" action=\"/reset\"><button>Again</button></form>\n",
                p.score,
                QUESTIONS.len()
            ));
        } else {
            let (q, choices, _) = QUESTIONS[p.next];
            html.push_str(&format!(
                "<h1>Question {} of {}</h1>\n<p>",
                p.next + 1,
                QUESTIONS.len()
            ));
            html_escape(q, &mut html);
            html.push_str(&format!(
                "</p>\n<form method=\"post\" action=\"/answer\"><input type=\"hidden\" name=\"q\" value=\"{}\">\n",
                p.next
            ));
            for (i, c) in choices.iter().enumerate() {
                html.push_str(&format!(
                    "<label><input type=\"radio\" name=\"a\" value=\"{i}\"> "
                ));
                html_escape(c, &mut html);
                html.push_str("</label><br>\n");
            }
            html.push_str(&format!(
                "<button>Answer</button></form>\n<p>Score so far: {}</p>\n",
                p.score
            ));
        }
        html.push_str("</body></html>\n");
        html
    }
}

/// Starts the quiz on 127.0.0.1:`port` (0: chosen by the OS).
pub fn start(port: u16) -> Result<ServerHandle, ServeError> {
    let quiz = Arc::new(Quiz::default());
    Server::builder()
        .workers(2)
        .handler(move |req| quiz.handle(req))
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
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    server.stop()
}
