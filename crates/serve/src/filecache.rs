//! The open-file cache: request path → a file ready to answer with (nginx's
//! `open_file_cache`, plus the response head and, for small files, the bytes).
//!
//! One cache per worker, no locks: a worker's connections live on its thread, so an
//! entry is plain data and a large file's descriptor is shared by `Rc`. Keyed by the
//! request's path **as sent** (still percent-encoded, without the query): normalizing
//! is a pure function of those bytes, so an entry found under a key is the entry the
//! full path checks produced — and a hit skips decoding, normalizing, `canonicalize`,
//! `open` and `fstat`, and formats nothing (see `files::answer`).
//!
//! Freshness: an entry is trusted for `valid` (default 500 ms) after it was checked;
//! the first hit after that re-runs the resolve checks (normalize, canonicalize, the
//! root test, the index rule) and `stat`s the result. The same canonical path with the
//! same identity (device, inode, size, mtime, ctime, mode) keeps the entry; anything
//! else (modified, renamed over, removed, symlink retargeted, `chmod`) drops it and
//! the request takes the full path, which may cache the new file. So a change is
//! served within `valid` plus one request, and a cached entry is never a way around a
//! check: every check is re-made at the same points as without a cache.
//!
//! Bounds (per worker): `entries` (each large file holds one descriptor) and `bytes`
//! (keys, heads, small bodies and a fixed per-entry overhead), least recently used
//! evicted first. An O(1) LRU: slots in a `Vec`, linked by index.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

/// The cache's settings (see `Config::file_cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileCacheConfig {
    /// How long an entry is trusted before it is checked against the file system.
    pub valid: Duration,
    /// Entries per worker.
    pub entries: usize,
    /// Bytes per worker: keys, heads, small bodies and per-entry overhead.
    pub bytes: usize,
    /// Files up to this size are kept in memory and sent with their head in one
    /// write (copied after the head up to 16 KiB, else `sendmsg` of head and body);
    /// larger ones keep their descriptor and are sent with `sendfile`.
    pub small: u64,
}

impl Default for FileCacheConfig {
    fn default() -> Self {
        FileCacheConfig {
            valid: Duration::from_millis(500),
            entries: 1024,
            bytes: 32 << 20,
            small: 128 << 10,
        }
    }
}

/// A file's identity: when any of it changes, the cached answer is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl FileId {
    pub fn of(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            mode: m.mode(),
        }
    }
}

/// A file's body: in memory (small files) or an open descriptor.
#[derive(Debug)]
pub(crate) enum Body {
    Memory(Rc<[u8]>),
    File(Rc<File>),
}

/// Everything needed to answer GET/HEAD for one file without touching the file system.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The normalized request path (what the checks are re-run on).
    pub normalized: Box<str>,
    /// Where the checks led.
    pub canon: PathBuf,
    pub id: FileId,
    pub size: u64,
    pub mtime: SystemTime,
    pub content_type: &'static str,
    pub etag: Box<str>,
    pub last_modified: Box<str>,
    /// The 200 head after `Date`: `Server` through `Content-Length`, each line CRLF.
    pub head200: Box<[u8]>,
    pub body: Body,
}

impl Entry {
    fn footprint(&self, key: &str) -> usize {
        let body = match &self.body {
            Body::Memory(b) => b.len(),
            Body::File(_) => 0,
        };
        ENTRY_OVERHEAD
            + 2 * key.len()
            + self.normalized.len()
            + self.canon.as_os_str().len()
            + self.etag.len()
            + self.last_modified.len()
            + self.head200.len()
            + body
    }
}

/// Bytes counted per entry beyond its strings: the slot, the map's key and index.
const ENTRY_OVERHEAD: usize = std::mem::size_of::<Slot>() + 64;
const NONE: usize = usize::MAX;

#[derive(Debug)]
struct Slot {
    key: Rc<str>,
    entry: Option<Entry>,
    checked: Instant,
    footprint: usize,
    prev: usize,
    next: usize,
}

/// What a lookup found.
pub(crate) enum Lookup<'a> {
    /// Trusted: answer from it.
    Fresh(&'a Entry),
    /// Past its validity: re-check, then [`FileCache::confirm`] or [`FileCache::remove`].
    Stale(&'a Entry),
    Miss,
}

/// FNV-1a: request paths are short and chosen by clients, but a worker's cache is
/// bounded and keys are only looked up, so flooding buys an attacker nothing a
/// bounded cache doesn't already limit; SipHash's cost would show on every hit.
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// One worker's cache.
#[derive(Debug)]
pub(crate) struct FileCache {
    cfg: FileCacheConfig,
    map: HashMap<Rc<str>, usize, BuildHasherDefault<Fnv>>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// Most recently used.
    head: usize,
    /// Least recently used.
    tail: usize,
    bytes: usize,
    pub hits: u64,
    pub misses: u64,
}

impl FileCache {
    pub fn new(cfg: FileCacheConfig) -> FileCache {
        FileCache {
            cfg,
            map: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NONE,
            tail: NONE,
            bytes: 0,
            hits: 0,
            misses: 0,
        }
    }

    pub fn config(&self) -> &FileCacheConfig {
        &self.cfg
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes held now (the quantity bounded by `bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Finds `key`, marking it most recently used.
    pub fn get(&mut self, key: &str, now: Instant) -> Lookup<'_> {
        let Some(&i) = self.map.get(key) else {
            self.misses += 1;
            return Lookup::Miss;
        };
        self.unlink(i);
        self.push_front(i);
        let slot = &self.slots[i];
        let Some(entry) = slot.entry.as_ref() else {
            return Lookup::Miss;
        };
        if now.saturating_duration_since(slot.checked) < self.cfg.valid {
            self.hits += 1;
            Lookup::Fresh(entry)
        } else {
            Lookup::Stale(entry)
        }
    }

    /// The entry under `key` was re-checked and still holds.
    pub fn confirm(&mut self, key: &str, now: Instant) {
        if let Some(&i) = self.map.get(key) {
            self.slots[i].checked = now;
            self.hits += 1;
        }
    }

    /// The entry under `key`, if any (after a confirm).
    pub fn peek(&self, key: &str) -> Option<&Entry> {
        self.map
            .get(key)
            .and_then(|&i| self.slots[i].entry.as_ref())
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(i) = self.map.remove(key) {
            self.release(i);
        }
    }

    /// Caches `entry` under `key`, evicting the least recently used as needed. An
    /// entry bigger than an eighth of the byte bound is not kept.
    pub fn insert(&mut self, key: &str, entry: Entry, now: Instant) {
        self.remove(key);
        let footprint = entry.footprint(key);
        if self.cfg.entries == 0 || footprint > self.cfg.bytes / 8 {
            return;
        }
        while self.map.len() >= self.cfg.entries || self.bytes + footprint > self.cfg.bytes {
            let lru = self.tail;
            if lru == NONE {
                break;
            }
            let k = self.slots[lru].key.clone();
            self.map.remove(&*k);
            self.release(lru);
        }
        let key: Rc<str> = Rc::from(key);
        let slot = Slot {
            key: key.clone(),
            entry: Some(entry),
            checked: now,
            footprint,
            prev: NONE,
            next: NONE,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.push_front(i);
        self.map.insert(key, i);
        self.bytes += footprint;
    }

    fn release(&mut self, i: usize) {
        self.unlink(i);
        let slot = &mut self.slots[i];
        slot.entry = None;
        slot.key = Rc::from("");
        self.bytes -= slot.footprint;
        slot.footprint = 0;
        self.free.push(i);
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.slots[i].prev, self.slots[i].next);
        match prev {
            NONE => {
                if self.head == i {
                    self.head = next;
                }
            }
            p => self.slots[p].next = next,
        }
        match next {
            NONE => {
                if self.tail == i {
                    self.tail = prev;
                }
            }
            n => self.slots[n].prev = prev,
        }
        self.slots[i].prev = NONE;
        self.slots[i].next = NONE;
    }

    fn push_front(&mut self, i: usize) {
        self.slots[i].prev = NONE;
        self.slots[i].next = self.head;
        if self.head != NONE {
            self.slots[self.head].prev = i;
        }
        self.head = i;
        if self.tail == NONE {
            self.tail = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> Entry {
        Entry {
            normalized: "/x".into(),
            canon: PathBuf::from("/r/x"),
            id: FileId {
                dev: 1,
                ino: 2,
                size: n as u64,
                mtime: (0, 0),
                ctime: (0, 0),
                mode: 0o644,
            },
            size: n as u64,
            mtime: SystemTime::UNIX_EPOCH,
            content_type: "text/plain",
            etag: "\"0-0\"".into(),
            last_modified: "x".into(),
            head200: Box::from(&b"Server: perflab\r\n"[..]),
            body: Body::Memory(Rc::from(vec![0; n])),
        }
    }

    fn cache(entries: usize, bytes: usize) -> FileCache {
        FileCache::new(FileCacheConfig {
            valid: Duration::from_secs(1),
            entries,
            bytes,
            small: 1 << 20,
        })
    }

    #[test]
    fn least_recently_used_goes_first() {
        let now = Instant::now();
        let mut c = cache(2, 1 << 20);
        c.insert("/a", entry(1), now);
        c.insert("/b", entry(1), now);
        assert!(matches!(c.get("/a", now), Lookup::Fresh(_)));
        c.insert("/c", entry(1), now);
        assert!(
            matches!(c.get("/b", now), Lookup::Miss),
            "b was least recent"
        );
        assert!(matches!(c.get("/a", now), Lookup::Fresh(_)));
        assert!(matches!(c.get("/c", now), Lookup::Fresh(_)));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn bytes_stay_under_the_bound() {
        let now = Instant::now();
        let bound = 64 << 10;
        let mut c = cache(100_000, bound);
        for i in 0..10_000 {
            c.insert(&format!("/f{i}"), entry(i % 3000), now);
            assert!(c.bytes() <= bound, "{} > {bound} after {i}", c.bytes());
        }
        assert!(c.len() > 10);
        let held: usize = c
            .slots
            .iter()
            .filter(|s| s.entry.is_some())
            .map(|s| s.footprint)
            .sum();
        assert_eq!(held, c.bytes());
    }

    #[test]
    fn an_entry_turns_stale_after_valid_and_confirm_renews_it() {
        let t0 = Instant::now();
        let mut c = cache(4, 1 << 20);
        c.insert("/a", entry(1), t0);
        let later = t0 + Duration::from_millis(1500);
        assert!(matches!(c.get("/a", later), Lookup::Stale(_)));
        c.confirm("/a", later);
        assert!(matches!(c.get("/a", later), Lookup::Fresh(_)));
        c.remove("/a");
        assert!(matches!(c.get("/a", later), Lookup::Miss));
        assert_eq!(c.bytes(), 0);
    }

    #[test]
    fn a_huge_entry_is_not_kept() {
        let mut c = cache(4, 8 << 10);
        c.insert("/big", entry(4 << 10), Instant::now());
        assert_eq!(c.len(), 0);
    }
}
