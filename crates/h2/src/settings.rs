//! SETTINGS (RFC 9113 §6.5.2): the peer's values as they stand, updated frame by frame
//! with the RFC's checks.

use crate::frame::FrameError;
use crate::{code, DEFAULT_WINDOW, MAX_FRAME_SIZE, MAX_WINDOW, MIN_FRAME_SIZE};

pub const HEADER_TABLE_SIZE: u16 = 0x1;
pub const ENABLE_PUSH: u16 = 0x2;
pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const MAX_FRAME_SIZE_ID: u16 = 0x5;
pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// One side's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    pub header_table_size: u32,
    pub enable_push: bool,
    /// `None`: unlimited (the default until the peer says otherwise).
    pub max_concurrent_streams: Option<u32>,
    pub initial_window_size: u32,
    pub max_frame_size: u32,
    pub max_header_list_size: Option<u32>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            header_table_size: 4096,
            enable_push: true,
            max_concurrent_streams: None,
            initial_window_size: DEFAULT_WINDOW,
            max_frame_size: MIN_FRAME_SIZE,
            max_header_list_size: None,
        }
    }
}

impl Settings {
    /// Applies a SETTINGS payload (not an ACK). Returns how much the initial window
    /// grew (negative: shrank), which changes every open stream's send window.
    pub fn apply(&mut self, payload: &[u8]) -> Result<i64, FrameError> {
        if !payload.len().is_multiple_of(6) {
            return Err(FrameError {
                code: code::FRAME_SIZE_ERROR,
                reason: "SETTINGS payload is not a multiple of 6 bytes",
            });
        }
        let old = i64::from(self.initial_window_size);
        for p in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([p[0], p[1]]);
            let v = u32::from_be_bytes([p[2], p[3], p[4], p[5]]);
            match id {
                HEADER_TABLE_SIZE => self.header_table_size = v,
                ENABLE_PUSH => {
                    if v > 1 {
                        return Err(FrameError {
                            code: code::PROTOCOL_ERROR,
                            reason: "SETTINGS_ENABLE_PUSH other than 0 or 1",
                        });
                    }
                    self.enable_push = v == 1;
                }
                MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(v),
                INITIAL_WINDOW_SIZE => {
                    if v > MAX_WINDOW {
                        return Err(FrameError {
                            code: code::FLOW_CONTROL_ERROR,
                            reason: "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        });
                    }
                    self.initial_window_size = v;
                }
                MAX_FRAME_SIZE_ID => {
                    if !(MIN_FRAME_SIZE..=MAX_FRAME_SIZE).contains(&v) {
                        return Err(FrameError {
                            code: code::PROTOCOL_ERROR,
                            reason: "SETTINGS_MAX_FRAME_SIZE outside 16384..2^24-1",
                        });
                    }
                    self.max_frame_size = v;
                }
                MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(v),
                _ => {} // unknown settings are ignored (§6.5.2)
            }
        }
        Ok(i64::from(self.initial_window_size) - old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(pairs: &[(u16, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        crate::frame::settings(&mut out, pairs);
        out.split_off(crate::HEAD_LEN)
    }

    #[test]
    fn applies_values_and_reports_the_window_change() {
        let mut s = Settings::default();
        let d = s
            .apply(&payload(&[
                (MAX_CONCURRENT_STREAMS, 1),
                (INITIAL_WINDOW_SIZE, 10),
                (0x99, 5),
            ]))
            .unwrap();
        assert_eq!(s.max_concurrent_streams, Some(1));
        assert_eq!(d, 10 - 65_535);
    }

    #[test]
    fn refuses_values_out_of_range() {
        let mut s = Settings::default();
        assert!(s
            .apply(&payload(&[(INITIAL_WINDOW_SIZE, 1 << 31)]))
            .is_err());
        assert!(s.apply(&payload(&[(MAX_FRAME_SIZE_ID, 100)])).is_err());
        assert!(s.apply(&payload(&[(ENABLE_PUSH, 2)])).is_err());
        assert!(s.apply(&[0; 5]).is_err());
    }
}
