#!/usr/bin/env bash
# The Python environment of the fixture/golden generators and scripts under tools/ (and
# bench/tokenizer/bench_encode.py). This script owns .tools-venv/ at the repo root (git-ignored): it creates it,
# installs tools/requirements.txt into it, and reinstalls only when that file (or the pip arguments) changed,
# recorded as a sha256 stamp inside the venv. CI never needs it: the tests run from the committed fixtures.
#
#   scripts/tools-env.sh                        set up (or check) the venv, print how to use it
#   scripts/tools-env.sh python tools/x.py ...  set up if needed, then run the command inside the venv
#                                               (in the current directory, venv's bin/ first on PATH)
#
# Everything this script prints goes to stderr, so `scripts/tools-env.sh python gen.py > out` captures only the
# command's own output.
#
# Environment:
#   NINFER_TOOLS_VENV          venv folder (default: <repo>/.tools-venv)
#   NINFER_TOOLS_REQUIREMENTS  requirements file (default: <repo>/tools/requirements.txt)
#   NINFER_TOOLS_PYTHON        interpreter that creates the venv (default: python3)
#   NINFER_TOOLS_PIP_ARGS      extra pip install arguments, e.g. an --extra-index-url (part of the stamp)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${NINFER_TOOLS_VENV:-$repo/.tools-venv}"
req="${NINFER_TOOLS_REQUIREMENTS:-$repo/tools/requirements.txt}"
py="${NINFER_TOOLS_PYTHON:-python3}"
pip_args="${NINFER_TOOLS_PIP_ARGS:-}"
stamp="$venv/.ninfer-requirements.sha256"

say() { echo "tools-env: $*" >&2; }
die() { echo "tools-env: error: $*" >&2; exit 1; }

[ -f "$req" ] || die "requirements file not found: $req"
command -v "$py" >/dev/null 2>&1 || die "'$py' not found; install Python 3 (Debian/Ubuntu: apt-get install python3 python3-venv)"

# The stamp covers the requirement lines (not comments or blank lines), the pip arguments and the interpreter version.
want="$( { sed -e 's/[[:space:]]*#.*//' -e '/^[[:space:]]*$/d' "$req"; echo "pip-args: $pip_args"
           "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)"

setup() {
  local created=0
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    return 0
  fi
  if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    # Debian/Ubuntu split venv's ensurepip into python3-venv; without it `python3 -m venv` leaves a venv with no pip.
    "$py" -c 'import venv, ensurepip' >/dev/null 2>&1 ||
      die "'$py -m venv' is not available (no venv/ensurepip module); install it: apt-get install python3-venv"
    say "creating $venv"
    "$py" -m venv --clear "$venv" >&2 || die "'$py -m venv $venv' failed (Debian/Ubuntu: apt-get install python3-venv)"
    created=1
  fi
  if [ "$created" = 1 ] && [ "$req" = "$repo/tools/requirements.txt" ]; then
    say "installing $req into $venv (the first time downloads torch with its CUDA wheels, ~3 GB, ~6 GB installed)"
  else
    say "installing $req into $venv"
  fi
  rm -f "$stamp"
  # shellcheck disable=SC2086  # NINFER_TOOLS_PIP_ARGS is a list of arguments
  "$venv/bin/python" -m pip install --disable-pip-version-check -r "$req" $pip_args >&2 ||
    die "pip install -r $req failed (see above); rerun after fixing, nothing was stamped"
  echo "$want" > "$stamp"
  say "ready"
}

if command -v flock >/dev/null 2>&1; then
  # Two concurrent first runs must not install into the same venv at once (the lock is on this script's file).
  exec 9<"${BASH_SOURCE[0]}"
  flock 9
fi
setup
if command -v flock >/dev/null 2>&1; then
  exec 9>&-
fi

if [ "$#" -eq 0 ]; then
  rel="$venv"
  case "$venv" in "$repo"/*) rel="${venv#"$repo"/}" ;; esac
  cat >&2 <<EOF
tools-env: $rel is up to date with ${req#"$repo"/}.
Run a tool through it (from the repo root):
  scripts/tools-env.sh python tools/constrain/make_schema_cases.py
or use it in this shell:
  source $rel/bin/activate
EOF
  exit 0
fi

export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
unset PYTHONHOME
exec "$@"
