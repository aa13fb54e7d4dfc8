//! Response header blocks on the client's HTTP/2 connection: a HEADERS frame, the
//! CONTINUATION frames that finish it, and the decoded block. Apart from the rest of
//! [`H2`] because it is the one place a server's bytes are held rather than counted —
//! so the one that needs a bound ([`MAX_HEADER_LIST`] bytes, [`MAX_BLOCK_FRAMES`]
//! frames; beyond, [`ErrorKind::HeaderBlockTooLarge`]).

use super::{n_bytes, protocol_error, H2, MAX_BLOCK_FRAMES, MAX_HEADER_LIST};
use crate::conn::{ErrorKind, Sent};
use crate::parse::Completed;
use perflab_h2::{flag, frame, Head, HEAD_LEN};

impl H2 {
    /// HEADERS: a whole header block, or the first part of one.
    pub(super) fn headers_frame(
        &mut self,
        h: &Head,
        payload: &[u8],
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        if h.stream == 0 {
            return Err(ErrorKind::Malformed);
        }
        let block = frame::unpad(h, payload).map_err(protocol_error)?;
        let end_stream = h.has(flag::END_STREAM);
        if h.has(flag::END_HEADERS) {
            self.headers(h.stream, end_stream, block, n_bytes(h), done, failed)?;
        } else {
            self.partial = Some((h.stream, end_stream));
            self.block.clear();
            self.block_frames = 1;
            self.grow_block(block)?;
        }
        Ok(())
    }

    /// CONTINUATION: more of the header block a HEADERS frame began.
    pub(super) fn continuation(
        &mut self,
        h: &Head,
        payload: &[u8],
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        let Some((id, end_stream)) = self.partial else {
            return Err(ErrorKind::Malformed);
        };
        if id != h.stream {
            return Err(ErrorKind::Malformed);
        }
        self.block_frames += 1;
        self.grow_block(payload)?;
        if h.has(flag::END_HEADERS) {
            self.partial = None;
            let block = std::mem::take(&mut self.block);
            let bytes = (block.len() + HEAD_LEN) as u64;
            let r = self.headers(id, end_stream, &block, bytes, done, failed);
            self.block = block;
            r?;
        }
        Ok(())
    }

    /// Adds `part` to the header block being gathered, within its bounds.
    fn grow_block(&mut self, part: &[u8]) -> Result<(), ErrorKind> {
        if self.block_frames > MAX_BLOCK_FRAMES
            || self.block.len() + part.len() > MAX_HEADER_LIST as usize
        {
            return Err(ErrorKind::HeaderBlockTooLarge);
        }
        self.block.extend_from_slice(part);
        Ok(())
    }

    /// A whole header block for stream `id` (decoded always: the HPACK table must stay
    /// in step with the server's even for streams no longer tracked).
    fn headers(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        bytes: u64,
        done: &mut Vec<(Sent, Completed)>,
        failed: &mut Vec<(Sent, ErrorKind)>,
    ) -> Result<(), ErrorKind> {
        let mut status = None;
        self.decoder
            .decode_only(
                block,
                |n| n == b":status",
                |_, v| status = std::str::from_utf8(v).ok().and_then(|v| v.parse().ok()),
            )
            .map_err(protocol_error)?;
        let Some(k) = self.find(id) else {
            return Ok(());
        };
        let s = &mut self.streams[k];
        s.bytes += bytes;
        match status {
            Some(st) if st >= 200 && s.status == 0 => s.status = st,
            _ => {} // 1xx, or trailers
        }
        if end_stream {
            self.complete(k, done, failed);
        }
        Ok(())
    }
}
