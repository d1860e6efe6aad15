#!/usr/bin/env bash
# A stand-in for `gh api` in tests: the subset the generated scripts use (`--method`, `-f`,
# `--jq`, `--silent`), forwarded with curl to the GitHub double at $GH_SHIM_API. Like gh, it
# exits 1 on an HTTP error and sends `-f` fields as a JSON object of strings.
set -euo pipefail
if [ "${1:-}" != api ]; then
  echo "gh shim: only 'gh api' is supported" >&2
  exit 2
fi
shift
method="" path="" jqexpr="" silent=false
fields=()
while [ $# -gt 0 ]; do
  case "$1" in
    --method | -X) method=$2; shift 2 ;;
    -f | -F | --raw-field | --field) fields+=("$2"); shift 2 ;;
    --jq | -q) jqexpr=$2; shift 2 ;;
    --silent) silent=true; shift ;;
    -*) echo "gh shim: unsupported flag $1" >&2; exit 2 ;;
    *) path=$1; shift ;;
  esac
done
args=(-sS -H "Authorization: Bearer $GH_TOKEN" -H "X-GitHub-Api-Version: 2022-11-28"
  -H "Accept: application/vnd.github+json" -w '\n%{http_code}')
if [ ${#fields[@]} -gt 0 ]; then
  data='{}'
  for f in "${fields[@]}"; do
    data=$(jq -c --arg k "${f%%=*}" --arg v "${f#*=}" '. + {($k): $v}' <<<"$data")
  done
  args+=(-H "Content-Type: application/json" --data "$data")
  method=${method:-POST}
fi
out=$(curl -X "${method:-GET}" "${args[@]}" "$GH_SHIM_API/${path#/}")
code=${out##*$'\n'}
body=${out%$'\n'*}
if [ "$code" -ge 400 ]; then
  echo "gh: HTTP $code: $body" >&2
  exit 1
fi
if $silent; then exit 0; fi
if [ -n "$jqexpr" ]; then jq -r "$jqexpr" <<<"$body"; else printf '%s\n' "$body"; fi
