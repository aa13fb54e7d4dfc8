//! Stream states as RFC 9113 §5.1, §5.1.1 and §5.3.1 and RFC 7541 §4.2 require them,
//! as a conformance suite (h2spec's §5.1 and HPACK §4.2 cases) checks them: frames on
//! closed, half-closed (remote) and reused streams, self-dependency, and a table size
//! update out of place.

use super::*;

fn data(stream: u32, end: bool) -> Vec<u8> {
    let mut b = Vec::new();
    frame::data(&mut b, stream, b"test", end, 16_384);
    b
}

fn rst_code_of(out: &[Frame], stream: u32) -> Option<u32> {
    out.iter()
        .find(|f| f.is(kind::RST_STREAM) && f.head.stream == stream)
        .map(|f| f.u32_at(0))
}

#[test]
fn stream_state_closed_data_and_headers_are_connection_errors_stream_closed() {
    for late in [data(1, true), get(1, "/a.txt", &[])] {
        let mut h = Harness::open(Config::default(), &[]);
        assert!(
            ends(&h.feed(&get(1, "/a.txt", &[])), 1),
            "answered and closed"
        );
        let out = h.feed(&late);
        assert_eq!(goaway_code(&out), Some(code::STREAM_CLOSED));
        assert!(h.session.failed());
    }
}

#[test]
fn stream_state_half_closed_remote_data_is_stream_closed() {
    // The response is still queued (window 0): the stream is half-closed (remote).
    let mut h = Harness::open(Config::default(), &[(INITIAL_WINDOW_SIZE, 0)]);
    h.feed(&get(1, "/a.txt", &[]));
    assert_eq!(h.session.active(), 1);
    let out = h.feed(&data(1, true));
    assert_eq!(rst_code_of(&out, 1), Some(code::STREAM_CLOSED));
    assert!(!h.session.failed());
}

#[test]
fn stream_state_closed_by_the_clients_reset_answers_stream_closed() {
    for late in [data(1, true), get(1, "/a.txt", &[])] {
        let mut h = Harness::open(Config::default(), &[(INITIAL_WINDOW_SIZE, 0)]);
        let mut b = Vec::new();
        frame::headers(
            &mut b,
            1,
            &hpack::encode(get_fields("/a.txt")),
            false,
            16_384,
        );
        frame::rst_stream(&mut b, 1, code::CANCEL);
        h.feed(&b);
        let out = h.feed(&late);
        assert_eq!(rst_code_of(&out, 1), Some(code::STREAM_CLOSED));
        assert!(!h.session.failed(), "a stream error");
        assert!(ends(&h.feed(&get(3, "/a.txt", &[])), 3) || h.session.active() == 1);
    }
}

#[test]
fn stream_state_frames_on_a_stream_we_reset_are_ignored() {
    // Refused (REFUSED_STREAM): what the client had in flight is ignored (§5.1).
    let config = Config {
        h2_max_streams: 1,
        ..Config::default()
    };
    let mut h = Harness::open(config, &[(INITIAL_WINDOW_SIZE, 0)]);
    h.feed(&get(1, "/a.txt", &[]));
    let out = h.feed(&get(3, "/a.txt", &[]));
    assert_eq!(rst_code_of(&out, 3), Some(code::REFUSED_STREAM));
    assert!(h.feed(&data(3, true)).is_empty());
    assert!(!h.session.failed());
}

#[test]
fn stream_ids_that_do_not_increase_are_a_protocol_error() {
    let mut h = Harness::open(Config::default(), &[]);
    assert!(ends(&h.feed(&get(5, "/a.txt", &[])), 5));
    let out = h.feed(&get(3, "/a.txt", &[]));
    assert_eq!(goaway_code(&out), Some(code::PROTOCOL_ERROR));
}

#[test]
fn a_stream_that_depends_on_itself_is_a_stream_error() {
    // HEADERS with the PRIORITY flag naming its own stream.
    let mut h = Harness::open(Config::default(), &[]);
    let block = hpack::encode(get_fields("/a.txt"));
    let mut p = vec![0, 0, 0, 1, 15];
    p.extend_from_slice(&block);
    let mut b = Vec::new();
    frame::write(
        &mut b,
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM | flag::PRIORITY,
        1,
        &p,
    );
    let out = h.feed(&b);
    assert_eq!(rst_code_of(&out, 1), Some(code::PROTOCOL_ERROR));
    assert!(data_of(&out, 1).is_empty(), "not answered");
    // A PRIORITY frame naming its own stream.
    let mut b = Vec::new();
    frame::write(&mut b, kind::PRIORITY, 0, 3, &[0, 0, 0, 3, 15]);
    assert_eq!(rst_code_of(&h.feed(&b), 3), Some(code::PROTOCOL_ERROR));
    assert!(!h.session.failed());
    assert!(
        ends(&h.feed(&get(5, "/a.txt", &[])), 5),
        "the connection goes on"
    );
}

#[test]
fn a_table_size_update_after_a_field_is_a_compression_error() {
    let mut h = Harness::open(Config::default(), &[]);
    let mut block = hpack::encode(get_fields("/a.txt"));
    block.push(0x20); // size update to 0, at the end of the block
    let mut b = Vec::new();
    frame::headers(&mut b, 1, &block, true, 16_384);
    assert_eq!(goaway_code(&h.feed(&b)), Some(code::COMPRESSION_ERROR));
}

#[test]
fn trailers_with_a_pseudo_field_are_a_stream_error() {
    let mut h = Harness::open(Config::default(), &[]);
    let mut b = Vec::new();
    frame::headers(
        &mut b,
        1,
        &hpack::encode(get_fields("/a.txt")),
        false,
        16_384,
    );
    let trailers: [(&[u8], &[u8]); 1] = [(b":path", b"/x")];
    frame::headers(&mut b, 1, &hpack::encode(trailers), true, 16_384);
    let out = h.feed(&b);
    assert_eq!(rst_code_of(&out, 1), Some(code::PROTOCOL_ERROR));
    assert!(!h.session.failed());
}
