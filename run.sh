#!/usr/bin/env bash
# xtc-katas quick start. Two commands, both safe to re-run (they skip what is installed):
#   ./run.sh         set up, then open the learner's loop (progress table, next step)
#   ./run.sh test    set up, then run the whole test suite (lint, harness, stubs, solved);
#                    it also installs chromium, for the notebook's browser test
# `./run.sh setup` only sets up. Anything else goes to the `xtc-katas` command:
# ./run.sh hint 1, ./run.sh run 3, ./run.sh notebook 4 ...
# Linux (apt-get) and macOS (Homebrew, Xcode's command line tools); bash 3.2 as macOS has it.
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
STAMP="$VENV/.xtc-katas-installed"
# bubblewrap: `xtc-katas grade` confines each grading with it (docs/grading.md).
SYSTEM_PACKAGES="libomp5 gcc g++ libc6-dev binutils bubblewrap"
# macOS: Homebrew's libomp and Python; cc and objdump come with Xcode's command line tools.
BREW_PACKAGES="libomp python@3.11"
DARWIN=
if [ "$(uname -s)" = Darwin ]; then DARWIN=1; fi

say() { printf '%s\n' "xtc-katas: $*" >&2; }

pick_python() {
    for py in python3.11 python3.12 python3.10 python3; do
        if command -v "$py" >/dev/null 2>&1 &&
            "$py" -c 'import sys, venv; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))' 2>/dev/null; then
            echo "$py"; return 0
        fi
    done
    return 1
}

# Homebrew's libomp is keg-only: its directory is where find_library (and XTC) look.
if [ -n "$DARWIN" ] && command -v brew >/dev/null 2>&1; then
    libomp_dir="$(brew --prefix libomp 2>/dev/null || true)/lib"
    export DYLD_FALLBACK_LIBRARY_PATH="$libomp_dir:${DYLD_FALLBACK_LIBRARY_PATH:-/usr/local/lib:/usr/lib}"
fi

missing_system_pieces() {
    local missing=()
    command -v cc >/dev/null 2>&1 || missing+=("a C compiler (cc)")
    # XTC links its host runtime with c++ (xtc/runtimes/host/runtime.py): Debian's g++
    command -v c++ >/dev/null 2>&1 || missing+=("a C++ compiler (c++)")
    command -v objdump >/dev/null 2>&1 || missing+=("objdump")
    # XTC's host runtime includes <assert.h>: Debian's gcc alone lacks it (libc6-dev)
    echo '#include <assert.h>' | cc -E -x c - >/dev/null 2>&1 || missing+=("the C headers")
    if [ -n "$DARWIN" ]; then # /usr/bin/python3 would not see DYLD_* (SIP)
        [ -e "${libomp_dir:-}/libomp.dylib" ] || missing+=("libomp")
    else
        command -v bwrap >/dev/null 2>&1 || missing+=("bubblewrap")
        python3 -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("omp") is None)' 2>/dev/null ||
            missing+=("libomp")
    fi
    (("${#missing[@]}")) && printf '%s, ' "${missing[@]}"
    return 0
}

ensure_system() {
    local missing
    missing=$(missing_system_pieces)
    [ -z "$missing" ] && return 0
    if [ -n "$DARWIN" ]; then
        ensure_system_darwin "$missing"
        return 0
    fi
    local started=$SECONDS
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        say "installing system packages XTC needs (${missing%, }): $SYSTEM_PACKAGES"
        apt-get update -qq
        # shellcheck disable=SC2086 # one word per package
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $SYSTEM_PACKAGES >/dev/null
        missing=$(missing_system_pieces)
        [ -z "$missing" ] && say "system packages installed in $((SECONDS - started)) s" && return 0
    fi
    if [ "$missing" = "bubblewrap, " ]; then # a learner's loop runs without it
        say "only \`xtc-katas grade\` needs bubblewrap, to confine each grading: sudo apt-get install -y bubblewrap"
        return 0
    fi
    say "XTC needs ${missing%, }. Install them, then run this again:"
    say "    sudo apt-get install -y $SYSTEM_PACKAGES"
    exit 1
}

ensure_system_darwin() {
    local missing=$1
    if command -v brew >/dev/null 2>&1 && [ "$(id -u)" != 0 ]; then
        say "installing with Homebrew what XTC needs (${missing%, }): $BREW_PACKAGES"
        # shellcheck disable=SC2086 # one word per package
        brew install $BREW_PACKAGES >/dev/null || true
        missing=$(missing_system_pieces)
        [ -z "$missing" ] && return 0
    fi
    say "XTC needs ${missing%, }. Install them, then run this again:"
    case "$missing" in *compiler* | *objdump* | *headers*)
        say "    xcode-select --install    # cc, c++, objdump and the C headers (Xcode's command line tools)" ;;
    esac
    command -v brew >/dev/null 2>&1 ||
        say "    Homebrew, from its web site (brew.sh), then:"
    say "    brew install $BREW_PACKAGES"
    exit 1
}

# What only `./run.sh test` needs, never the learner's loop: Debian's chromium, which the
# notebook's browser test (tests/test_notebook_app.py) drives through Playwright (whose own
# browser download is not used, and cannot work offline), and iproute2's `ip`, with which
# tests/test_cluster_tls.py makes its two nodes. ~1 min 50 s with apt-get update on a busy
# 2-vCPU AMD EPYC (family 23 model 1), once per machine.
TEST_PACKAGES="chromium iproute2"

missing_test_tools() {
    [ -n "${XTC_KATAS_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 || printf 'chromium '
    [ -n "$DARWIN" ] || command -v ip >/dev/null 2>&1 || printf 'ip '
    return 0
}

ensure_test_tools() {
    [ -z "$(missing_test_tools)" ] && return 0
    if [ -n "$DARWIN" ]; then
        say "no chromium: the notebook's browser test skips; for it: brew install --cask chromium, then XTC_KATAS_CHROMIUM=<its binary> ./run.sh test"
        return 0
    fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        local started=$SECONDS
        say "installing $TEST_PACKAGES for the browser and two-node tests (once per machine)"
        # Offline (or a broken mirror) must not abort `set -e`: the message below says it.
        # shellcheck disable=SC2086 # one word per package
        { apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $TEST_PACKAGES >/dev/null; } ||
            true
        [ -z "$(missing_test_tools)" ] && say "installed in $((SECONDS - started)) s" && return 0
    fi
    # Not fatal here: outside CI those tests skip, saying the same; in CI they fail.
    say "no $(missing_test_tools)for the browser and two-node tests: sudo apt-get install -y $TEST_PACKAGES"
}

# sha256sum on Linux, shasum (perl's, in every macOS) elsewhere.
checksum() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi
}

ensure_venv() {
    local want
    want=$(checksum pyproject.toml | cut -d' ' -f1)
    if [ -x "$VENV/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    local py
    py=$(pick_python) || { say "needs Python 3.10-3.12 with the venv module${DARWIN:+: brew install python@3.11}"; exit 1; }
    say "creating $VENV with $py and the pinned dependencies (xtc-tools[mlir,tvm]==0.3.2, ~1.7 GB: under a minute the first time)"
    local started=$SECONDS
    [ -x "$VENV/bin/python" ] || "$py" -m venv "$VENV"
    local log="$VENV/install.log"
    if ! install_dependencies >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        say "installing the dependencies failed; the whole log is in $log"
        exit 1
    fi
    echo "$want" >"$STAMP"
    say "$VENV made in $((SECONDS - started)) s"
}

# uv installs the same pinned wheels as pip, from the indexes pip is configured with, in
# 21 s instead of 52 s on a fresh venv (Intel Xeon family 6 model 207, 2 vCPU): it unpacks
# the 1.7 GB in parallel. --compile-bytecode, as pip does: without it, where
# PYTHONDONTWRITEBYTECODE is set, every process compiled TVM's Python again (+1 s of CPU
# each). --no-cache: nothing left behind in ~/.cache. Where uv cannot be had or fails, pip
# does it alone.
UV_VERSION=0.13.9

# pip's index settings (its config files and PIP_* variables) as uv's options, one a line.
pip_index_options() {
    local key value each
    "$VENV/bin/python" -m pip config list 2>/dev/null | while IFS= read -r line; do
        key=${line%%=*} value=${line#*=}
        value=${value#\'} value=${value%\'}
        case "${key##*.}" in
            index-url | extra-index-url | find-links | constraint)
                for each in $value; do printf -- '--%s\n%s\n' "${key##*.}" "$each"; done
                ;;
        esac
    done
}

install_dependencies() {
    local options=() line
    if "$VENV/bin/python" -m pip install "uv==$UV_VERSION"; then
        while IFS= read -r line; do options+=("$line"); done < <(pip_index_options) # no mapfile in bash 3.2
        # unsafe-best-match: every index is searched for the best version, as pip does.
        # ${options[@]+...}: an empty array is "unbound" to bash 3.2's set -u.
        "$VENV/bin/uv" pip install --no-cache --compile-bytecode --python "$VENV/bin/python" \
            --index-strategy unsafe-best-match ${options[@]+"${options[@]}"} -e ".[dev]" && return 0
        echo "uv could not install the dependencies: pip does it alone"
    fi
    "$VENV/bin/python" -m pip install --upgrade pip &&
        "$VENV/bin/python" -m pip install -e ".[dev]"
}

ensure_system
ensure_venv

case "${1:-}" in
    setup)
        say "ready: $VENV is up to date"
        ;;
    test)
        shift
        ensure_test_tools
        # A private temp dir for the whole run, checked afterwards: nothing may be left
        # in it but pytest's own directories, and nothing new in the repository.
        scratch="$(mktemp -d)"
        status=0
        TMPDIR="$scratch" "$VENV/bin/tox" run -e lint,harness,stubs,solved "$@" || status=$?
        left="$(find "$scratch" -mindepth 1 -maxdepth 1 ! -name 'pytest-of-*' ! -name 'tox-*')"
        if [ -n "$left" ]; then
            echo "xtc-katas: the run left files in its temp dir:" >&2
            echo "$left" >&2
            status=1
        fi
        if [ -d .git ] && [ -n "$(git status --porcelain)" ]; then
            echo "xtc-katas: the run changed the repository:" >&2
            git status --porcelain >&2
            status=1
        fi
        rm -rf "$scratch"
        exit "$status"
        ;;
    *)
        exec "$VENV/bin/xtc-katas" "$@"
        ;;
esac
