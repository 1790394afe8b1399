#!/usr/bin/env bash
# Installs what `make test` needs beyond Go when it is missing: redis-server
# (the Redis driver's tests start their own on free loopback ports), initdb
# and postgres from postgresql and pgbouncer (the PostgreSQL driver's tests
# start their own the same way), mariadbd from mariadb-server (fence's MySQL
# dialect, tested in fence/mysqltest against its own server), node and npm
# (the TypeScript client's build and tests), chromium (the lock page's test
# drives it headless), systemd-analyze from systemd (deploy/'s unit is
# verified with it). Extra
# arguments name more commands to make sure of, each from the Debian package
# of the same name (.ci/run passes `make`), or COMMAND:PACKAGE when the
# package is named otherwise (`make bench-peers` passes etcd:etcd-server).
#
# Uses apt-get, through sudo when not root. Where that is not possible it
# says what to install and exits 1.
set -euo pipefail

missing=()  # packages to install
commands=() # the commands they bring
# have: cmd is on PATH, or where Debian puts PostgreSQL's programs (off
# PATH: /usr/lib/postgresql/VERSION/bin) and daemons (/usr/sbin).
have() {
	command -v "$1" >/dev/null 2>&1 && return 0
	local p
	for p in /usr/lib/postgresql/*/bin/"$1" /usr/sbin/"$1"; do
		[[ -x $p ]] && return 0
	done
	return 1
}

for arg in redis-server openssl initdb:postgresql pgbouncer mariadbd:mariadb-server node:nodejs npm chromium systemd-analyze:systemd "$@"; do
	cmd=${arg%%:*}
	pkg=${arg#*:}
	have "$cmd" && continue
	missing+=("$pkg")
	commands+=("$cmd")
done
((${#missing[@]})) || exit 0

cannot() {
	echo "test-deps: ${commands[*]} not found on PATH, and cannot install ${missing[*]}: $1." >&2
	echo "test-deps: install ${missing[*]} (Debian/Ubuntu: apt-get install ${missing[*]};" \
		"Fedora: dnf install ${missing[*]/redis-server/redis}; macOS: brew install ${missing[*]/redis-server/redis})," \
		"then run the tests again." >&2
	exit 1
}

command -v apt-get >/dev/null 2>&1 || cannot "apt-get is not available to install them"
run=()
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || cannot "not root, and no sudo"
	run=(sudo)
	# Without a terminal, sudo must not wait for a password nobody types.
	[[ -t 0 ]] || run=(sudo -n)
fi

# The service a package may start is not used: the tests start their own
# servers on free loopback ports.
echo "test-deps: installing ${missing[*]} with ${run[*]:+${run[*]} }apt-get"
"${run[@]}" apt-get update -q </dev/null || cannot "apt-get update failed"
"${run[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null ||
	cannot "apt-get install failed"
for cmd in "${commands[@]}"; do
	have "$cmd" || cannot "$cmd is still not on PATH after apt-get install"
done
