#!/usr/bin/env bash
# The whole test suite, from a clean clone: installs what the tests need when it is
# missing (Debian packages; runs apt-get update first), then checks formatting and
# lints, then runs every test in the workspace.
#
#   scripts/test.sh            # what CI runs (.ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

# program → Debian package that provides it
declare -A PKG=(
  [gzip]=gzip [awk]=mawk [python3]=python3 [cc]=gcc [make]=make
  [javac]=default-jdk-headless [go]=golang-go [node]=nodejs
  [nginx]=nginx [wrk]=wrk [perf]=linux-perf [ip]=iproute2 [pgrep]=procps [setpriv]=util-linux
  [ssh]=openssh-client [ssh-keygen]=openssh-client [sshd]=openssh-server
  [chromium]=chromium [h2load]=nghttp2-client [openssl]=openssl [curl]=curl
  [srun]=slurm-wlm [slurmctld]=slurm-wlm [slurmd]=slurm-wlm [munged]=munge
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
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --no-fail-fast
