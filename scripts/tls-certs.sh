#!/usr/bin/env bash
# Makes the certificates of a TLS cluster with openssl: a CA, and for each
# NAME=ADDR a certificate for that node (its address, IP or DNS name, in
# the subject alternative names; usable as a server and as a client, since
# nodes dial each other's raft port with it), and for each bare NAME a
# client certificate (mutual TLS: --tls-client-auth).
#
#   scripts/tls-certs.sh DIR n1=10.0.0.1 n2=10.0.0.2 n3=10.0.0.3 app
#
# DIR gets ca.pem and ca-key.pem (keep the key off the nodes), NAME.pem and
# NAME-key.pem. Keys are EC P-256; certificates last DAYS (default 825).
set -euo pipefail

if (($# < 2)); then
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 64
fi
dir=$1
shift
days=${DAYS:-825}
mkdir -p "$dir"
cd "$dir"

if [[ ! -f ca.pem ]]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
		-subj "/CN=zerotal lock CA" -keyout ca-key.pem -out ca.pem 2>/dev/null
fi

for spec in "$@"; do
	name=${spec%%=*}
	addr=""
	[[ $spec == *=* ]] && addr=${spec#*=}
	ext="basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment"
	if [[ -n $addr ]]; then
		if [[ $addr =~ ^[0-9.]+$ || $addr == *:* ]]; then
			san="IP:$addr"
		else
			san="DNS:$addr"
		fi
		ext+="
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san"
	else
		ext+="
extendedKeyUsage=clientAuth"
	fi
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$name-key.pem" -out "$name.csr" 2>/dev/null
	openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days "$days" \
		-extfile <(printf '%s\n' "$ext") -out "$name.pem" 2>/dev/null
	rm -f "$name.csr"
	chmod 600 "$name-key.pem"
	echo "$dir/$name.pem $dir/$name-key.pem"
done
