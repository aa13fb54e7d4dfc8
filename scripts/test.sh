#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what the tests need when it is
# missing (Debian packages; runs apt-get update first), then checks formatting, lints
# and function lengths, then runs every test in the workspace with PERFLAB_REQUIRE=1:
# a test whose tool, privilege or kernel feature is missing fails instead of skipping
# (docs/testing.md; the rule is tests/require.rs).
#
#   scripts/test.sh            # what CI runs (.ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# Under this switch no test passes by skipping (tests/require.rs).
export PERFLAB_REQUIRE=1
# sshd, ip and slurmd live in sbin; the tests look programs up on PATH only.
export PATH="$PATH:/usr/sbin:/sbin"

# program → Debian package that provides it
declare -A PKG=(
  [gzip]=gzip [awk]=mawk [python3]=python3 [cc]=gcc [gcc]=gcc [make]=make
  [javac]=default-jdk-headless [go]=golang-go [node]=nodejs
  [nginx]=nginx [wrk]=wrk [perf]=linux-perf [ip]=iproute2 [pgrep]=procps [setpriv]=util-linux
  [ssh]=openssh-client [ssh-keygen]=openssh-client [sshd]=openssh-server
  [chromium]=chromium [h2load]=nghttp2-client [openssl]=openssl [curl]=curl
  [srun]=slurm-wlm [sinfo]=slurm-wlm [slurmctld]=slurm-wlm [slurmd]=slurm-wlm [munged]=munge
  [java]=default-jdk-headless [jcmd]=default-jdk-headless [losetup]=mount [unshare]=util-linux
)
missing=()
for prog in "${!PKG[@]}"; do
  command -v "$prog" >/dev/null 2>&1 || missing+=("${PKG[$prog]}")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found — install Rust (https://rustup.rs) first" >&2
  exit 1
fi

cargo fmt --all -- --check

# No function over 100 lines in crates/*/src (the counter lives beside the clone, in
# ../shared; its last line is `count=K`). Missing counter: a failure, never a pass.
LONGFNS="${PERFLAB_LONGFNS:-../shared/tools/longfns.py}"
if [ ! -f "$LONGFNS" ]; then
  echo "error: $LONGFNS not found — the function-length check cannot run" >&2
  exit 1
fi
long="$(python3 "$LONGFNS" 100 crates/*/src)"
last="$(printf '%s\n' "$long" | tail -n 1)"
if [ "$last" != "count=0" ]; then
  printf '%s\n' "$long" >&2
  case "$last" in
    count=*) echo "error: functions over 100 lines in crates/*/src (split them by step)" >&2 ;;
    *) echo "error: $LONGFNS gave no count= line" >&2 ;;
  esac
  exit 1
fi

cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --no-fail-fast
