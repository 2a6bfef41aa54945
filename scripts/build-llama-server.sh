#!/usr/bin/env bash
# Builds llama-server (+ llama-fit-params) from the llama.cpp source that ships inside the npm package
# node-llama-cpp (file llama/gitRelease.bundle, a git bundle). CPU build, static, portable (GGML_NATIVE=OFF).
#
# The binaries are cached under ${OCW_LLAMA_CACHE:-$HOME/.cache/opencode-worker/llama}/<commit>-<confighash>/bin
# and never rebuilt on a cache hit. ccache is used when installed (CCACHE_BASEDIR makes fresh temp dirs hit).
# The last line on stdout is the absolute path of llama-server; everything else goes to stderr.
#
# Needs: git, cmake, ninja-build (or make), g++, npm (only on a cache miss to fetch the package tarball).
# Env: OCW_LLAMA_CACHE (cache root), NODE_LLAMA_CPP_VERSION (pinned below), NODE_LLAMA_CPP_DIR (an unpacked
#      node-llama-cpp package to take the bundle from instead of `npm pack`), JOBS (default: nproc),
#      GGML_CUDA=1 (a CUDA build: needs nvcc; llama.cpp publishes no Linux CUDA binaries, so setup builds one here).
set -euo pipefail

PKG_VERSION="${NODE_LLAMA_CPP_VERSION:-3.21.1}"
CACHE_ROOT="${OCW_LLAMA_CACHE:-$HOME/.cache/opencode-worker/llama}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
TARGETS=(llama-server llama-fit-params)
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF)
if [[ "${GGML_CUDA:-0}" == "1" ]]; then
  command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] || { echo "build-llama-server: error: GGML_CUDA=1 needs nvcc (the CUDA toolkit)" >&2; exit 1; }
  command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
  # the CUDA runtime links dynamically; the compute capabilities of the GPUs here only (faster, smaller)
  CMAKE_ARGS+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)
fi

log() { echo "build-llama-server: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in git cmake; do command -v "$tool" >/dev/null || die "$tool not found; install it (apt-get install -y cmake git ninja-build g++ ccache)"; done
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler; apt-get install -y g++"

mkdir -p "$CACHE_ROOT"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/ocw-llama-build.XXXXXX")"
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

# 1. Locate the bundle: an unpacked package, or the npm tarball (kept in the cache so a hit needs no npm).
BUNDLE=""
if [[ -n "${NODE_LLAMA_CPP_DIR:-}" ]]; then
  BUNDLE="$NODE_LLAMA_CPP_DIR/llama/gitRelease.bundle"
  [[ -f "$BUNDLE" ]] || die "no llama/gitRelease.bundle in NODE_LLAMA_CPP_DIR=$NODE_LLAMA_CPP_DIR"
else
  BUNDLE="$CACHE_ROOT/bundles/node-llama-cpp-$PKG_VERSION.bundle"
  if [[ ! -f "$BUNDLE" ]]; then
    command -v npm >/dev/null || die "npm not found (needed once to fetch node-llama-cpp@$PKG_VERSION)"
    log "fetching node-llama-cpp@$PKG_VERSION tarball (npm pack, no install scripts)"
    (cd "$WORK" && npm pack --silent "node-llama-cpp@$PKG_VERSION" >/dev/null) || die "npm pack node-llama-cpp@$PKG_VERSION failed"
    tar -xzf "$WORK"/node-llama-cpp-*.tgz -C "$WORK" package/llama/gitRelease.bundle \
      || die "the node-llama-cpp@$PKG_VERSION tarball has no llama/gitRelease.bundle"
    mkdir -p "$CACHE_ROOT/bundles"
    mv "$WORK/package/llama/gitRelease.bundle" "$BUNDLE.tmp.$$" && mv "$BUNDLE.tmp.$$" "$BUNDLE"
  fi
fi

# 2. Cache key: commit + hash of everything that changes the binary.
COMMIT="$(git bundle list-heads "$BUNDLE" | awk 'NR==1{print $1}')"
[[ -n "$COMMIT" ]] || die "cannot read the commit of $BUNDLE"
CXX_ID="$( (c++ --version 2>/dev/null || g++ --version) | head -1)"
CONF_HASH="$(printf '%s\n' "${CMAKE_ARGS[*]}" "${TARGETS[*]}" "$CXX_ID" "$(uname -m)" | sha256sum | cut -c1-10)"
KEY="${COMMIT:0:12}-$CONF_HASH"
DEST="$CACHE_ROOT/$KEY"

if [[ -x "$DEST/bin/llama-server" ]] && "$DEST/bin/llama-server" --version >/dev/null 2>&1; then
  log "cache hit $DEST"
  echo "$DEST/bin/llama-server"
  exit 0
fi

# 3. Build.
log "cache miss ($KEY); building ${TARGETS[*]} with -j$JOBS (about 9 min cold on 2 cores, ~15 s with a warm ccache)"
START=$(date +%s)
git clone --quiet "$BUNDLE" "$WORK/llama.cpp" >&2 2>&1 || die "git clone of the bundle failed"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
export CCACHE_BASEDIR="$WORK" CCACHE_NOHASHDIR=1
if ! command -v ccache >/dev/null; then log "ccache not installed: rebuilds from an empty binary cache will be cold"; fi
cmake -S "$WORK/llama.cpp" -B "$WORK/build" "${GEN[@]}" "${CMAKE_ARGS[@]}" >&2 || die "cmake configure failed"
cmake --build "$WORK/build" --target "${TARGETS[@]}" -j"$JOBS" >&2 || die "cmake build failed"

# 4. Publish atomically.
TMP_DEST="$DEST.tmp.$$"
mkdir -p "$TMP_DEST/bin"
for t in "${TARGETS[@]}"; do cp "$WORK/build/bin/$t" "$TMP_DEST/bin/"; done
# Test vocabularies and chat templates from the same tree (tiny test GGUFs copy their tokenizer from these).
mkdir -p "$TMP_DEST/share/vocab" "$TMP_DEST/share/templates"
cp "$WORK"/llama.cpp/models/ggml-vocab-*.gguf "$TMP_DEST/share/vocab/" 2>/dev/null || true
cp "$WORK"/llama.cpp/models/templates/*.jinja "$TMP_DEST/share/templates/" 2>/dev/null || true
printf '{"commit":"%s","package":"node-llama-cpp@%s","built":"%s","seconds":%d}\n' "$COMMIT" "$PKG_VERSION" \
  "$(date -u +%FT%TZ)" "$(( $(date +%s) - START ))" >"$TMP_DEST/build-info.json"
rm -rf "$DEST"
mv "$TMP_DEST" "$DEST"
"$DEST/bin/llama-server" --version >/dev/null 2>&1 || die "built llama-server does not run"
log "built in $(( $(date +%s) - START )) s → $DEST"
echo "$DEST/bin/llama-server"
