//! Unit tests of `perflab http`'s argument handling (moved out of http.rs, which had
//! grown past 700 lines).

use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    http: HttpArgs,
}

#[test]
fn the_trials_options_read_back_as_the_spec_the_flags_make() {
    let cases: &[&[&str]] = &[
        &["http://127.0.0.1:1/", "-n", "100"],
        &[
            "-c",
            "3",
            "-t",
            "2",
            "-d",
            "1m30s",
            "--warmup",
            "2s",
            "-m",
            "POST",
            "-H",
            "X-A: b",
            "--body",
            "{\"a\": {x}}",
            "--no-keepalive",
            "--pipeline",
            "4",
            "--timeout",
            "3s",
            "--connect-timeout",
            "1500ms",
            "--io",
            "epoll",
            "--http1.1",
            "--threshold",
            "p99<20ms",
            "--threshold",
            "error_rate<0.1%",
            "http://127.0.0.1:1/{port}",
        ],
        &[
            "--rate",
            "2.5k",
            "--max-connections",
            "40",
            "-k",
            "https://h:1/",
        ],
        &[
            "--ramp",
            "100:1000:3",
            "--ramp-over",
            "connections",
            "--step-duration",
            "1s",
            "--http2",
            "--streams",
            "8",
            "--h2-window",
            "65535",
            "http://h:1/",
        ],
        &[
            "--find-max",
            "--slo",
            "p99<20ms",
            "--max-error-rate",
            "1%",
            "--order",
            "random",
            "http://h:1/",
        ],
    ];
    for args in cases {
        let cli = Cli::try_parse_from(std::iter::once("http").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let spec = spec_from_args(&cli.http).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let back = perflab_workloads::http::HttpWorkload::checked(options_from_args(&cli.http))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(back.spec, spec, "{args:?}");
    }
}
