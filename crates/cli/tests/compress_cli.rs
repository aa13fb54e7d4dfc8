//! `perflab compress` and `kind = "compress"`: the summary's JSON contract, a ratio
//! that follows the level, and bad input as usage errors naming the flag.

mod common;
use common::*;

fn metric(config: &serde_json::Value, name: &str) -> f64 {
    config["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {config}"))["mean"]
        .as_f64()
        .unwrap()
}

#[test]
fn three_algorithms_in_one_run_with_the_show_json_contract() {
    let lab = Lab::new();
    let v = lab.json(&["compress", "--size", "1M", "-r", "2", "--json"]);
    let configs = v["configs"].as_array().unwrap();
    let algs: Vec<&str> = configs
        .iter()
        .map(|c| c["params"]["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(algs, ["gzip", "zstd", "lz4"]);
    for c in configs {
        for m in [
            "compress_mb_s",
            "decompress_mb_s",
            "ratio",
            "compressed_bytes",
        ] {
            assert!(metric(c, m) > 0.0, "{m} in {c}");
        }
        let n = c["metrics"][0]["n"].as_u64().unwrap();
        assert_eq!(n, 2);
    }
    assert_eq!(v["run"]["kind"], "compress");
}

#[test]
fn zeros_compress_far_better_than_random_and_threads_all_works() {
    let lab = Lab::new();
    let z = lab.json(&[
        "compress", "-a", "zstd", "--data", "zeros", "--size", "2M", "-r", "1", "--json",
    ]);
    let r = lab.json(&[
        "compress",
        "-a",
        "zstd",
        "--data",
        "random",
        "--size",
        "2M",
        "-r",
        "1",
        "--threads",
        "all",
        "--json",
    ]);
    assert!(metric(&z["configs"][0], "ratio") > 100.0);
    assert!(metric(&r["configs"][0], "ratio") < 1.01);
}

#[test]
fn an_experiment_over_levels_stores_a_ratio_that_follows_the_level() {
    let lab = Lab::new();
    let exp = lab.write(
        "c.toml",
        "[experiment]\nrepetitions = 1\nwarmup = 0\nnoise_check = false\n\
         [matrix]\nlevel = [1, 9]\n\
         [workload]\nkind = \"compress\"\nalgorithm = \"gzip\"\nlevel = \"{level}\"\nsize = \"2M\"\n",
    );
    let v = lab.json(&["run", exp.to_str().unwrap(), "--json"]);
    let (l1, l9) = (
        metric(&v["configs"][0], "ratio"),
        metric(&v["configs"][1], "ratio"),
    );
    assert!(l9 > l1, "gzip -9 {l9} vs -1 {l1}");
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    let lab = Lab::new();
    for (args, words) in [
        (vec!["compress", "-a", "brotli"], "--algorithm"),
        (vec!["compress", "--size", "0"], "size"),
        (vec!["compress", "--size", "1MB"], "ambiguous"),
        (
            vec!["compress", "-a", "gzip", "--level", "12"],
            "--level 12",
        ),
        (vec!["compress", "--level", "3"], "one algorithm"),
        (vec!["compress", "--data", "pictures"], "--data"),
        (vec!["compress", "--threads", "0"], "--threads"),
    ] {
        let out = lab.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{args:?}: {}", stderr(&out));
    }
}
