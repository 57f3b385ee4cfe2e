#!/usr/bin/env bash
# Builds ninfer-serve (CPU preset) and serves the embedded default model on http://127.0.0.1:8080.
# Extra arguments go to ninfer-serve (e.g. --port 9000 --log-jsonl timings.jsonl). Once the model is ready it prints
# a curl and an OpenAI Python client command that work against this server: the address it listens on (the real port
# with --port 0) and the model id it serves, both read from the server's own log lines.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset linux-cpu
cmake --build --preset linux-cpu -j "${NINFER_JOBS:-$(nproc)}" --target ninfer-serve ninfer-pack

# Whether the API wants a bearer key (--api-key, or NINFER_API_KEY which ninfer-serve reads too).
auth=0
[ -n "${NINFER_API_KEY:-}" ] && auth=1
for a in "$@"; do case "$a" in --api-key|--api-key=*) auth=1 ;; esac; done

# Prints the client commands for base URL $1 and model id $2, as lines a shell can paste.
usage_for() {
  local base="$1" model="$2" hdr="" key='"none"'
  if [ "$auth" = 1 ]; then
    hdr=" -H \"Authorization: Bearer \$NINFER_API_KEY\""
    key='os.environ["NINFER_API_KEY"]'
  fi
  cat <<EOF
# ---- ninfer-serve is ready: model '$model' at $base/v1
EOF
  if [ "$auth" = 1 ]; then
    echo "# the API wants a key: export NINFER_API_KEY=<a key given to --api-key / NINFER_API_KEY> first"
  fi
  cat <<EOF
# curl:
curl -s $base/v1/chat/completions -H 'Content-Type: application/json'$hdr \\
  -d '{"model":"$model","messages":[{"role":"user","content":"Write a function that reverses a string."}],"max_tokens":200}'
# OpenAI Python client (pip install openai; scripts/test.sh puts it in .venv/, so .venv/bin/python works too):
python3 - <<'PY'
import os
from openai import OpenAI
client = OpenAI(base_url="$base/v1", api_key=$key)
r = client.chat.completions.create(model="$model", max_tokens=200,
    messages=[{"role": "user", "content": "Write a function that reverses a string."}])
print(r.choices[0].message.content)
PY
# ----
EOF
}

# Relays the server's stdout line by line; after "model ready", prints the client commands. It ignores Ctrl-C and
# TERM so that the server's drain lines still come through; it ends when the server closes its stdout.
announce() {
  trap '' INT TERM
  local line url="" hostport host port model
  while IFS= read -r line; do
    printf '%s\n' "$line"
    case "$line" in
      *"listening on http://"*)
        hostport="${line#*listening on http://}"; hostport="${hostport%% *}"
        port="${hostport##*:}"; host="${hostport%:*}"; host="${host#[}"; host="${host%]}"
        case "$host" in
          0.0.0.0|"") host=127.0.0.1 ;;
          ::) host="[::1]" ;;
          *:*) host="[$host]" ;;
        esac
        url="http://$host:$port" ;;
      *"model ready: serving '"*)
        model="${line#*model ready: serving \'}"; model="${model%%\'*}"
        if [ -n "$url" ]; then usage_for "$url" "$model"; fi ;;
    esac
  done
}

# exec keeps the server at this script's PID (signals reach it directly); its stdout goes through announce.
exec build/apps/ninfer-serve "$@" > >(announce)
