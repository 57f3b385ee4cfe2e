#!/usr/bin/env bash
# The Windows check that runs here: cross-builds the CPU configuration with MinGW-w64 (preset windows-mingw,
# build-mingw/) and runs the Windows test subset under Wine (docs/windows.md). Stages, all by default:
#   deps   apt-get installs mingw-w64 and wine64; PCRE2 10.42 and cpp-httplib 0.11.4 (single header) from Debian's source
#          packages (sha256-pinned), GoogleTest (/usr/src/googletest), built for the target into build-mingw-deps/,
#          beside links to the header-only libraries (nlohmann-json, fmt, spdlog, CLI11, xxHash) from /usr/include
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
httplib_version=0.11.4+ds
httplib_debian_version=0.11.4+ds-1+deb12u1
httplib_sha256=8b1a5df569003b6a4f24c68489bbda5c64aec94697bdc9ebba5d79408b2ae7eb  # cpp-httplib_0.11.4+ds.orig.tar.xz
export WINEDEBUG="${WINEDEBUG:--all}" WINEPREFIX="${WINEPREFIX:-$root/build-mingw-deps/wineprefix}"
# Wine decodes the Unix command line and file names with the locale's charset: UTF-8, for the CJK paths.
export LC_ALL=C.UTF-8

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

# Sources for the target from Debian bookworm's source packages, fetched with apt-get source through a private deb-src
# list (the machine's apt configuration is left as it is) and unpacked with Debian's patches applied; the upstream
# tarball is pinned by sha256. Usage: fetch_source PACKAGE VERSION ORIG_TARBALL SHA256 → unpacked under $deps/src.
fetch_source() {
  local pkg="$1" version="$2" orig="$3" sha="$4" dir="$deps/src"
  mkdir -p "$dir/apt/lists/partial"
  printf 'deb-src http://deb.debian.org/debian bookworm main\ndeb-src http://deb.debian.org/debian-security bookworm-security main\n' \
    >"$dir/apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o "Dir::State::Lists=$dir/apt/lists" -o APT::Sandbox::User=root)
  [ -n "$(ls -A "$dir/apt/lists" 2>/dev/null | grep -v partial)" ] || apt-get "${opts[@]}" update -qq
  (cd "$dir" && apt-get "${opts[@]}" source -qq "$pkg=$version" >/dev/null)
  echo "$sha  $dir/$orig" | sha256sum -c --quiet - ||
    { echo "$dir/$orig: sha256 differs from the pinned $sha; delete $dir and rerun" >&2; exit 1; }
}

build_deps() {
  install_packages
  local stamp="$deps/prefix/.stamp-pcre2-${pcre2_version}-gtest-httplib-${httplib_version}"
  if [ ! -f "$stamp" ]; then
    rm -rf "$deps/src"
    fetch_source pcre2 "${pcre2_version}-1" "pcre2_${pcre2_version}.orig.tar.gz" "$pcre2_sha256"
    fetch_source cpp-httplib "$httplib_debian_version" "cpp-httplib_${httplib_version}.orig.tar.xz" "$httplib_sha256"
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
  # Debian's httplib.h is split into a header and a shared library; its source package has the single header. A copy
  # (never through a link: that would write into /usr/include).
  mkdir -p "$deps/prefix/include"
  rm -f "$deps/prefix/include/httplib.h"
  cp "$deps/src/cpp-httplib-$httplib_version/httplib.h" "$deps/prefix/include/httplib.h"
  # Header-only libraries, linked one by one so that /usr/include itself (Linux's libc headers) is never on the
  # target's include path.
  mkdir -p "$deps/prefix/include"
  local h
  for h in nlohmann fmt spdlog CLI xxhash.h xxh3.h; do
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
