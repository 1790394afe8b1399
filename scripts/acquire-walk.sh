#!/usr/bin/env bash
# acquire-walk.sh [DIR]: lists the files of the module at DIR (default: this
# checkout) whose code runs for one acquire from the client to the engine.
# It builds scripts/acquirewalk with coverage counters, which runs a
# warmed-up single-node cluster in process, clears the counters, makes one
# client.Acquire and writes the counters; every file with a non-zero
# counter is listed. For a DIR without scripts/acquirewalk (an older
# commit) this checkout's copy is used.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "${1:-$here}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ ! -f "$repo/scripts/acquirewalk/main.go" ]; then
	mkdir -p "$repo/scripts/acquirewalk"
	cp "$here/scripts/acquirewalk/main.go" "$repo/scripts/acquirewalk/main.go"
	trap 'rm -rf "$out" "$repo/scripts/acquirewalk"' EXIT
fi
(cd "$repo" && go build -cover -covermode=atomic -coverpkg=github.com/zerotal/lock/... -o "$out/walk" ./scripts/acquirewalk)
mkdir -p "$out/acquire" "$out/exit"
WALK_DIR=$out/acquire GOCOVERDIR=$out/exit "$out/walk"
go tool covdata textfmt -i="$out/acquire" -o="$out/profile.txt"
awk 'NR > 1 && $NF > 0 { split($1, f, ":"); print f[1] }' "$out/profile.txt" |
	sed 's#^github.com/zerotal/lock/##' | grep -v '^scripts/' | sort -u
