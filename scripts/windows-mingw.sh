#!/usr/bin/env bash
# The Windows check that runs here: cross-builds the CPU configuration with MinGW-w64 (preset windows-mingw,
# build-mingw/) and runs the Windows test subset under Wine (docs/windows.md). Stages, all by default:
#   deps   apt-get installs mingw-w64 and wine64; PCRE2 10.42 (Debian's source package, sha256-pinned) and GoogleTest
#          (/usr/src/googletest) are built for the target into build-mingw-deps/, beside links to the header-only
#          libraries (nlohmann-json, fmt, spdlog, CLI11, cpp-httplib, xxHash) from Debian's include directory
#   build  configures windows-mingw and builds ninfer-serve.exe, ninfer-pack.exe and ninfer_tests_windows.exe
#   test   runs ninfer_tests_windows.exe under Wine; its server test drives ninfer-serve.exe with the openai client
# Usage: scripts/windows-mingw.sh [deps|build|test]...   NINFER_JOBS (default nproc), NINFER_TEST_VENV (.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
deps="$root/build-mingw-deps"
jobs="${NINFER_JOBS:-$(nproc)}"
stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(deps build test)
pcre2_version=10.42
pcre2_sha256=c33b418e3b936ee3153de2c61cc638e7e4fe3156022a5c77d0711bcbb9d64f1f   # pcre2_10.42.orig.tar.gz
export WINEDEBUG="${WINEDEBUG:--all}" WINEPREFIX="${WINEPREFIX:-$root/build-mingw-deps/wineprefix}"

install_packages() {
  local pkgs=(mingw-w64 g++-mingw-w64-x86-64-posix wine64 cmake ninja-build libcpp-httplib-dev nlohmann-json3-dev
              libspdlog-dev libfmt-dev libcli11-dev libxxhash-dev googletest python3 python3-venv)
  local missing=() p
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return
  local sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
}

# PCRE2's upstream tarball as Debian ships it in its source package (bookworm), fetched with apt-get source through a
# private deb-src list: the machine's apt configuration is left as it is.
fetch_pcre2() {
  local dir="$deps/src" tarball="$deps/src/pcre2_${pcre2_version}.orig.tar.gz"
  mkdir -p "$dir/apt/lists/partial"
  if [ ! -f "$tarball" ]; then
    echo "deb-src http://deb.debian.org/debian bookworm main" >"$dir/apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
                -o "Dir::State::Lists=$dir/apt/lists" -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" update -qq
    (cd "$dir" && apt-get "${opts[@]}" source --download-only -qq "pcre2=${pcre2_version}-1")
  fi
  echo "$pcre2_sha256  $tarball" | sha256sum -c --quiet - ||
    { echo "$tarball: sha256 differs from the pinned $pcre2_sha256; delete it and rerun" >&2; exit 1; }
  rm -rf "$dir/pcre2-$pcre2_version"
  tar -xzf "$tarball" -C "$dir"
}

build_deps() {
  install_packages
  local stamp="$deps/prefix/.stamp-pcre2-${pcre2_version}-gtest"
  if [ ! -f "$stamp" ]; then
    fetch_pcre2
    local tc="$root/cmake/mingw-w64-x86_64.toolchain.cmake"
    cmake -S "$deps/src/pcre2-$pcre2_version" -B "$deps/pcre2-build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$tc" \
      -DNINFER_MINGW_DEPS="$deps/prefix" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps/prefix" \
      -DBUILD_SHARED_LIBS=OFF -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF \
      -DPCRE2_SUPPORT_JIT=ON -DPCRE2_SUPPORT_UNICODE=ON -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF >/dev/null
    cmake --build "$deps/pcre2-build" -j "$jobs" --target install >/dev/null
    cmake -S /usr/src/googletest -B "$deps/gtest-build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$tc" \
      -DNINFER_MINGW_DEPS="$deps/prefix" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps/prefix" \
      -DBUILD_GMOCK=OFF -Dgtest_disable_pthreads=OFF >/dev/null
    cmake --build "$deps/gtest-build" -j "$jobs" --target install >/dev/null
    touch "$stamp"
  fi
  # Header-only libraries, linked one by one so that /usr/include itself (Linux's libc headers) is never on the
  # target's include path.
  mkdir -p "$deps/prefix/include"
  local h
  for h in nlohmann fmt spdlog CLI httplib.h xxhash.h xxh3.h; do
    [ -e "/usr/include/$h" ] || { echo "/usr/include/$h missing: apt-get install the package that ships it" >&2; exit 1; }
    ln -sfn "/usr/include/$h" "$deps/prefix/include/$h"
  done
}

build() {
  echo "== windows-mingw: configure + build (-j$jobs)"
  cmake --preset windows-mingw >/dev/null
  cmake --build --preset windows-mingw -j "$jobs"
}

# The test binary runs inside `script`: its pseudo-terminal gives Wine a console, which Ctrl-C / Ctrl-Break need
# (GenerateConsoleCtrlEvent); the output goes to a log printed afterwards. Wine's wineserver is stopped at the end.
run_tests() {
  local venv="${NINFER_TEST_VENV:-$root/.venv}" bin="$root/build-mingw" rc=0 log="$root/build-mingw/windows-tests.log"
  [ -d "$WINEPREFIX" ] || { echo "== wine prefix ($WINEPREFIX)"; wineboot -i >/dev/null 2>&1 || true; }
  echo "== windows-mingw: ninfer_tests_windows.exe under Wine ($(wine --version))"
  timeout 900 script -qec "wine '$bin/tests/windows/ninfer_tests_windows.exe' --gtest_brief=1 >'$log' 2>&1" /dev/null \
    </dev/null >/dev/null || rc=$?
  cat "$log"
  # The official openai client on the Linux side against ninfer-serve.exe under Wine on 127.0.0.1.
  if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import openai" 2>/dev/null; then
    echo "== windows-mingw: openai client (Linux) -> ninfer-serve.exe (Wine): tests/serve/openai_real_server_test.py"
    printf '#!/bin/sh\nexec wine "%s" "$@"\n' "$bin/apps/ninfer-serve.exe" >"$bin/ninfer-serve-wine"
    chmod +x "$bin/ninfer-serve-wine"
    timeout 600 "$venv/bin/python" tests/serve/openai_real_server_test.py "$bin/ninfer-serve-wine" || rc=$?
    echo "== windows-mingw: Ctrl-C, CJK Windows paths, JSONL: tests/windows/wine_ctrl_c_test.py"
    timeout 300 "$venv/bin/python" tests/windows/wine_ctrl_c_test.py "$bin/apps/ninfer-serve.exe" \
      models/ninfer-tiny.ninfer || rc=$?
  else
    echo "no Python with the openai package at $venv (scripts/test.sh makes it): the client tests cannot run" >&2
    rc=1
  fi
  wineserver -k 2>/dev/null || true
  return "$rc"
}

t_all=$SECONDS
for stage in "${stages[@]}"; do
  t=$SECONDS
  case "$stage" in
    deps) echo "== windows-mingw: dependencies ($deps)"; build_deps ;;
    build) build ;;
    test) run_tests ;;
    *) echo "unknown stage '$stage' (deps, build, test)" >&2; exit 2 ;;
  esac
  echo "== windows-mingw: $stage took $((SECONDS - t)) s"
done
echo "== windows-mingw: all stages took $((SECONDS - t_all)) s"
