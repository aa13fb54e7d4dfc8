//! Connection storage of one worker, indexed by epoll token.
//!
//! A token is `generation << 32 | index`: when a slot is reused, its generation
//! changes, so an event for a connection closed earlier in the same `epoll_wait` batch
//! can't reach the new occupant. Generations stay below 2^31, which keeps tokens clear
//! of the worker's reserved ones near `u64::MAX`.

use crate::conn::Conn;

#[derive(Debug, Default)]
pub(crate) struct Slab {
    slots: Vec<(u32, Option<Conn>)>,
    free: Vec<u32>,
    len: usize,
}

impl Slab {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores a connection and returns its token.
    pub fn insert(&mut self, conn: Conn) -> u64 {
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[idx as usize];
        slot.1 = Some(conn);
        self.len += 1;
        (u64::from(slot.0) << 32) | u64::from(idx)
    }

    pub fn get_mut(&mut self, token: u64) -> Option<&mut Conn> {
        let (gen, idx) = ((token >> 32) as u32, token as u32);
        match self.slots.get_mut(idx as usize) {
            Some((g, conn)) if *g == gen => conn.as_mut(),
            _ => None,
        }
    }

    pub fn remove(&mut self, token: u64) -> Option<Conn> {
        let (gen, idx) = ((token >> 32) as u32, token as u32);
        let slot = self.slots.get_mut(idx as usize)?;
        if slot.0 != gen {
            return None;
        }
        let conn = slot.1.take()?;
        slot.0 = (slot.0 + 1) & 0x7fff_ffff;
        self.free.push(idx);
        self.len -= 1;
        Some(conn)
    }

    /// Tokens of all stored connections.
    pub fn tokens(&self) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, (_, c))| c.is_some())
            .map(|(i, (g, _))| (u64::from(*g) << 32) | i as u64)
            .collect()
    }
}
