# Shared helpers for the project scripts: install what is missing, build the site.
# Sourced, not run.

set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

WASM_BINDGEN_VERSION="0.2.130"   # must equal the wasm-bindgen crate version in Cargo.toml

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root to run: $*" >&2; return 1; fi
}

apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

ensure_rust() {
  command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs" >&2; exit 1; }
  # Installs the toolchain pinned in rust-toolchain.toml if missing; the target is added
  # explicitly because rustup does not add listed targets to an installed toolchain.
  rustup show active-toolchain >/dev/null 2>&1 || rustup toolchain install
  rustup target add wasm32-unknown-unknown >/dev/null 2>&1
  export PATH="$HOME/.cargo/bin:$PATH"
}

# What the server's crates build against: OpenSSL's headers and pkg-config (webauthn-rs, for
# passkeys, links OpenSSL). Debian's packages, when missing.
ensure_build_deps() {
  local missing=()
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  if ! pkg-config --exists openssl 2>/dev/null; then missing+=(libssl-dev); fi
  if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (for OpenSSL, which the passkey crate links)"
    apt_install "${missing[@]}"
  fi
}

ensure_wasm_bindgen() {
  if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 2 minutes, once)"
    # No --locked: a locked dependency of this release is missing from the registry.
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --quiet
  fi
}

# wasm-opt for release bundles: on PATH, or binaryen from npm kept under target/tools (never a
# GitHub download). Prints the command, or nothing when neither is available.
wasm_opt_command() {
  if command -v wasm-opt >/dev/null; then echo wasm-opt; return; fi
  local local_bin="$ROOT/target/tools/node_modules/.bin/wasm-opt"
  if [ ! -x "$local_bin" ] && command -v npm >/dev/null; then
    say "installing wasm-opt (npm binaryen, once)"
    mkdir -p "$ROOT/target/tools"
    [ -f "$ROOT/target/tools/package.json" ] || echo '{"private":true}' > "$ROOT/target/tools/package.json"
    (cd "$ROOT/target/tools" && npm install --no-audit --no-fund --silent binaryen@132 >/dev/null 2>&1) || true
  fi
  [ -x "$local_bin" ] && echo "$local_bin"
}

# .cargo/config.toml's `--cfg erase_components` is replaced, not extended, by a RUSTFLAGS-style
# variable (or a target's own rustflags): warn when one is set without the cfg, since a server
# and a bundle built differently cannot hydrate.
check_rustflags() {
  local var
  for var in CARGO_ENCODED_RUSTFLAGS RUSTFLAGS CARGO_BUILD_RUSTFLAGS \
      $(compgen -v | grep -E '^CARGO_TARGET_.*_RUSTFLAGS$' || true); do
    if [ -n "${!var+set}" ] && [[ "${!var}" != *erase_components* ]]; then
      say "warning: $var is set without --cfg erase_components, which turns the cfg off for this build; build the server and the bundle alike (see .cargo/config.toml)"
    fi
  done
}

# The bundle splitter (tools/wasm-split, a crate of its own on crates.io's
# wasm_split_cli_support), built once into target/tools/bin; rebuilt when its sources change.
WASM_SPLIT="$ROOT/target/tools/bin/countersign-wasm-split"
ensure_wasm_split() {
  local stamp="$ROOT/target/tools/wasm-split.stamp" want
  want="$(cat "$ROOT/tools/wasm-split/Cargo.toml" "$ROOT/tools/wasm-split/Cargo.lock" \
    "$ROOT/tools/wasm-split/src/main.rs" | sha256sum | cut -d' ' -f1)"
  if [ ! -x "$WASM_SPLIT" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "building the bundle splitter (tools/wasm-split, about a minute, once)"
    CARGO_TARGET_DIR="$ROOT/target/tools/build" cargo install --path "$ROOT/tools/wasm-split" \
      --root "$ROOT/target/tools" --locked --quiet --force
    echo "$want" > "$stamp"
  fi
}

# build_site debug|release: the wasm bundle, its JS glue and the CSS into target/site/pkg.
# Views are type-erased (Leptos's `--cfg erase_components`, from .cargo/config.toml): a much
# smaller bundle. The server is built with the same cfg (same config file): an erased view
# renders different hydration markers, so a bundle and a server built one with and one without
# it do not match and the page fails to hydrate.
#
# The bundle is split at the lazy routes (src/ui/lazy_pages.rs): linked with relocations kept
# (`--emit-relocs`, on this crate's link only), cut by countersign-wasm-split into the main
# module, `split_*.wasm`/`chunk_*.wasm` and their loader, then the main module goes through
# wasm-bindgen. A bundle with lazy routes must be split, debug builds too: unsplit, it imports
# a placeholder module no browser has.
build_site() {
  local profile="$1" cargo_profile_flag=() dir=debug
  if [ "$profile" = release ]; then cargo_profile_flag=(--profile wasm-release); dir=wasm-release; fi
  check_rustflags
  ensure_wasm_split
  say "building the browser bundle ($profile)"
  cargo rustc --lib --target wasm32-unknown-unknown --no-default-features --features hydrate \
    "${cargo_profile_flag[@]}" --quiet -- -C link-arg=--emit-relocs
  local raw="target/wasm32-unknown-unknown/$dir/countersign.wasm"
  local main="target/wasm32-unknown-unknown/$dir/countersign_split.wasm"
  mkdir -p target/site/pkg
  # Chunks of an earlier build must not outlive it (their names are not unique per build).
  rm -f target/site/pkg/split_*.wasm target/site/pkg/chunk_*.wasm target/site/pkg/__wasm_split*
  "$WASM_SPLIT" "$raw" target/site/pkg "$main" ./countersign.js >/dev/null
  wasm-bindgen "$main" --target web --no-typescript --keep-lld-exports --no-demangle \
    --out-dir target/site/pkg --out-name countersign
  local optimized=no
  if [ "$profile" = release ]; then
    local wasm_opt file
    wasm_opt="$(wasm_opt_command || true)"
    if [ -n "$wasm_opt" ]; then
      say "optimizing the bundle with wasm-opt -Oz (about 30 s)"
      for file in target/site/pkg/countersign_bg.wasm target/site/pkg/split_*.wasm \
          target/site/pkg/chunk_*.wasm; do
        [ -f "$file" ] || continue
        "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
          --strip-debug --strip-producers -o "$file" "$file"
      done
      optimized=yes
    else
      say "wasm-opt unavailable (no npm): the bundle is not size-optimized"
    fi
  fi
  # What `countersign bench` reports figure 8 from.
  printf 'profile=%s\nwasm_opt=%s\n' "$profile" "$optimized" > target/site/pkg/BUILD
  cp style/main.css target/site/pkg/countersign.css
  cp -r public/. target/site/ 2>/dev/null || true
}

# build_server debug|release
build_server() {
  local flag=()
  [ "$1" = release ] && flag=(--release)
  check_rustflags
  say "building the server ($1)"
  cargo build --features ssr --bin countersign "${flag[@]}" --quiet
}

# What the browser tests need: Debian's Chromium, Node.js with npm, and Playwright from npm
# (its own browser download is skipped: it cannot be fetched here and is not needed).
ensure_e2e_deps() {
  command -v chromium >/dev/null || { say "installing chromium"; apt_install chromium; }
  command -v npm >/dev/null || { say "installing nodejs and npm"; apt_install nodejs npm; }
  if [ ! -x end2end/node_modules/.bin/playwright ] || [ ! -f end2end/node_modules/axe-core/axe.min.js ]; then
    say "installing Playwright and axe-core (npm)"
    (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent)
  fi
}

# The outside agents the tests run for real (scripts/agents.txt pins each), installed from npm
# under target/agents/<name> (or $COUNTERSIGN_AGENTS_DIR), each only when its pinned version is
# not already there; and tmux, which drives their terminals. A cold install of all six takes
# about a minute here (npm's own cache makes a later one a few seconds).
ensure_agents() {
  command -v tmux >/dev/null || { say "installing tmux"; apt_install tmux; }
  command -v npm >/dev/null || { say "installing nodejs and npm"; apt_install nodejs npm; }
  local dir="${COUNTERSIGN_AGENTS_DIR:-$ROOT/target/agents}" name spec bin pkg version have
  while read -r name spec bin; do
    case "$name" in ''|'#'*) continue ;; esac
    pkg="${spec%@*}"; version="${spec##*@}"
    have="$(node -p "require('$dir/$name/node_modules/$pkg/package.json').version" 2>/dev/null || true)"
    if [ "$have" != "$version" ] || [ ! -x "$dir/$name/node_modules/.bin/$bin" ]; then
      say "installing $spec (npm)"
      mkdir -p "$dir/$name"
      npm install --prefix "$dir/$name" --no-audit --no-fund --no-save --silent "$spec"
    fi
  done < "$ROOT/scripts/agents.txt"
  export COUNTERSIGN_AGENTS_DIR="$dir" COUNTERSIGN_REAL_AGENTS=required
}

# The OpenID Connect provider the sign-in tests run for real (npm `oidc-provider`, pinned),
# installed under target/oidc-provider (or $COUNTERSIGN_OIDC_PROVIDER_DIR) when its pinned
# version is not there; `end2end/oidc/provider.mjs` starts it. Exported so tests/oidc fails,
# rather than skips, when it is missing.
OIDC_PROVIDER_VERSION="9.13.3"
ensure_oidc_provider() {
  command -v npm >/dev/null || { say "installing nodejs and npm"; apt_install nodejs npm; }
  local dir="${COUNTERSIGN_OIDC_PROVIDER_DIR:-$ROOT/target/oidc-provider}" have
  have="$(node -p "require('$dir/node_modules/oidc-provider/package.json').version" 2>/dev/null || true)"
  if [ "$have" != "$OIDC_PROVIDER_VERSION" ]; then
    say "installing oidc-provider@$OIDC_PROVIDER_VERSION (npm)"
    mkdir -p "$dir"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$dir" --no-audit --no-fund --no-save \
      --silent "oidc-provider@$OIDC_PROVIDER_VERSION"
  fi
  export COUNTERSIGN_OIDC_PROVIDER_DIR="$dir" COUNTERSIGN_OIDC_PROVIDER=required
}

# A throwaway PostgreSQL cluster for the tests, on a free loopback port, stopped and removed
# when the calling script exits; installs Debian's postgresql when missing. Exports
# COUNTERSIGN_TEST_POSTGRES_URL (the store suite runs on it). initdb refuses root, so as root
# the cluster runs as the `postgres` user the package creates. fsync is off (tests need no
# durability) unless PG_FSYNC=on (benchmarks comparing with SQLite's synchronous FULL).
start_test_postgres() {
  local bindir dir port tries
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
  if [ -z "$bindir" ]; then
    say "installing postgresql"
    apt_install postgresql
    bindir="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
  fi
  dir="$(mktemp -d /tmp/countersign-pg.XXXXXX)"
  PG_AS=()
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; PG_AS=(runuser -u postgres --); fi
  "${PG_AS[@]}" "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
  for tries in 1 2 3 4 5; do
    port=$(( 20000 + RANDOM % 40000 ))
    if "${PG_AS[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 30 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=${PG_FSYNC:-off}" start >/dev/null; then
      PG_STOP="${PG_AS[*]} $bindir/pg_ctl -D $dir/data -m immediate stop"
      # shellcheck disable=SC2064
      trap "$PG_STOP >/dev/null 2>&1; rm -rf '$dir'" EXIT
      export COUNTERSIGN_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
      say "PostgreSQL for the tests on 127.0.0.1:$port"
      return 0
    fi
  done
  echo "could not start a PostgreSQL cluster for the tests; its log:" >&2
  cat "$dir/log" >&2 || true
  return 1
}
