#!/usr/bin/env bash
# What telemetry sampling costs: the sampler's own CPU time with every probe, per
# sample and as a share of one core at a 1 s interval. Target: < 1 % of one core.
#
# Usage: bench/telemetry-overhead.sh [SECONDS]     (default 10)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
exec cargo run --release -q --manifest-path "$ROOT/Cargo.toml" -p perflab-telemetry --example overhead -- "${1:-10}"
