#!/usr/bin/env bash
# netns-hosts.sh — several "hosts" on one machine, for Gleaner's multi-host
# tests: one network namespace per host, each with its own IP on a bridge in
# the root namespace. The hosts share the filesystem (= shared storage) and
# the PID space; only the network is separate.
#
#   netns-hosts.sh up PREFIX N [OCTET]   create bridge ${PREFIX}br (10.OCTET.0.1/24)
#                                        and namespaces ${PREFIX}1..N (10.OCTET.0.(10+i));
#                                        prints "NAME IP" per host
#   netns-hosts.sh down PREFIX           kill what runs in ${PREFIX}<digits>, remove
#                                        those namespaces, their veths, the bridge
#                                        (idempotent)
#   netns-hosts.sh exec PREFIX I CMD...  run CMD in namespace ${PREFIX}I
#
# OCTET (second octet of the subnet) defaults to $NETNS_HOSTS_OCTET, else 77;
# two runs side by side need different prefixes and octets.
#
# PREFIX is 1-6 characters of [a-z0-9] ending with a letter: interface names
# (${PREFIX}br, ${PREFIX}v<i>) must fit IFNAMSIZ (15), and the final letter
# keeps "down gl1" from matching the namespace gl12 of prefix "gl".
#
# Leftovers of a killed test run: internal/nethosts writes a marker
# $NETNS_HOSTS_MARKER_DIR/PREFIX (default /run/gleaner-netns) per run and
# sweeps stale ones itself; by hand:
#   for p in $(ls /run/gleaner-netns); do scripts/netns-hosts.sh down "$p"; done
# (or `make netns-clean`). Needs root and iproute2's `ip`.
set -euo pipefail

readonly MARKER_DIR="${NETNS_HOSTS_MARKER_DIR:-/run/gleaner-netns}"
readonly BR_NF=/proc/sys/net/bridge/bridge-nf-call-iptables

die() {
	echo "netns-hosts.sh: $*" >&2
	exit 1
}

note() {
	echo "netns-hosts.sh: $*" >&2
}

usage() {
	cat >&2 <<'EOF'
usage: netns-hosts.sh up PREFIX N [OCTET]
       netns-hosts.sh down PREFIX
       netns-hosts.sh exec PREFIX I CMD...
EOF
	exit 2
}

require() {
	[ "$EUID" -eq 0 ] || die "must run as root (network namespaces, bridges and veths need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
	command -v ip >/dev/null 2>&1 || die "the 'ip' command (iproute2) is not on PATH"
	[ -e /proc/self/ns/net ] || die "this kernel has no network namespaces (/proc/self/ns/net is missing: CONFIG_NET_NS)"
	ip netns list >/dev/null 2>&1 || die "'ip netns' does not work here: $(ip netns list 2>&1 | head -n1)"
}

check_prefix() {
	[[ "$1" =~ ^[a-z0-9]{0,5}[a-z]$ ]] ||
		die "PREFIX '$1' must be 1-6 characters of [a-z0-9] ending with a letter (interface names must fit 15 characters)"
}

# namespaces PREFIX: the namespaces ${PREFIX}<digits>, one a line.
namespaces() {
	ip netns list | awk -v re="^$1[0-9]+\$" '$1 ~ re { print $1 }'
}

# root_links PREFIX: the root namespace's veth ends ${PREFIX}v<digits> and
# ${PREFIX}p<digits> (the latter only if up died before moving one).
root_links() {
	ip -o link show | awk -F': ' -v re="^$1[vp][0-9]+\$" '{ sub(/@.*/, "", $2); if ($2 ~ re) print $2 }'
}

# With br_netfilter loaded and bridge-nf-call-iptables=1, frames crossing a
# bridge go through iptables' FORWARD chain, which Docker and many firewalls
# set to DROP: the hosts could then reach the bridge address but not each
# other. Accept everything bridged by our own bridge.
allow_bridged() {
	local br=$1
	if ! [ -r "$BR_NF" ] || [ "$(cat "$BR_NF")" != 1 ]; then
		return 0
	fi
	if command -v iptables >/dev/null 2>&1; then
		iptables -w -C FORWARD -i "$br" -o "$br" -j ACCEPT 2>/dev/null ||
			iptables -w -I FORWARD 1 -i "$br" -o "$br" -j ACCEPT ||
			die "bridge-nf-call-iptables=1 and adding an iptables ACCEPT rule for $br failed"
	else
		note "note: bridge-nf-call-iptables=1 (br_netfilter) but no iptables command: traffic between the hosts passes the host's netfilter FORWARD rules, and no ACCEPT rule for $br could be added"
	fi
}

disallow_bridged() {
	local br=$1
	command -v iptables >/dev/null 2>&1 || return 0
	while iptables -w -D FORWARD -i "$br" -o "$br" -j ACCEPT 2>/dev/null; do :; done
}

UNDO_PREFIX=
undo_up() {
	local rc=$?
	if [ "$rc" -ne 0 ] && [ -n "$UNDO_PREFIX" ]; then
		down "$UNDO_PREFIX" >/dev/null 2>&1 || true
	fi
}

up() {
	local prefix=$1 n=$2 octet=${3:-${NETNS_HOSTS_OCTET:-77}}
	check_prefix "$prefix"
	if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 244 ]; then
		die "N '$n' must be 1..244"
	fi
	if ! [[ "$octet" =~ ^[0-9]+$ ]] || [ "$octet" -gt 255 ]; then
		die "OCTET '$octet' must be 0..255"
	fi
	require
	local br="${prefix}br" net="10.${octet}.0"
	if ip link show "$br" >/dev/null 2>&1 || [ -n "$(namespaces "$prefix")" ]; then
		die "hosts of prefix $prefix already exist (run: $0 down $prefix)"
	fi
	# Undo a half-made set on any failure.
	UNDO_PREFIX=$prefix
	trap undo_up EXIT

	ip link add "$br" type bridge forward_delay 0 ||
		die "cannot create bridge $br (is the kernel's bridge support missing? CONFIG_BRIDGE)"
	ip addr add "${net}.1/24" dev "$br"
	ip link set "$br" up
	allow_bridged "$br"

	local i ns
	for ((i = 1; i <= n; i++)); do
		ns="${prefix}${i}"
		ip netns add "$ns"
		ip link add "${prefix}v${i}" type veth peer name "${prefix}p${i}" ||
			die "cannot create a veth pair (is the kernel's veth support missing? CONFIG_VETH)"
		ip link set "${prefix}v${i}" master "$br"
		ip link set "${prefix}v${i}" up
		ip link set "${prefix}p${i}" netns "$ns"
		ip -n "$ns" link set "${prefix}p${i}" name eth0
		ip -n "$ns" addr add "${net}.$((10 + i))/24" dev eth0
		ip -n "$ns" link set lo up
		ip -n "$ns" link set eth0 up
		ip -n "$ns" route add default via "${net}.1"
	done
	trap - EXIT
	for ((i = 1; i <= n; i++)); do
		echo "${prefix}${i} ${net}.$((10 + i))"
	done
}

down() {
	local prefix=$1
	check_prefix "$prefix"
	require
	local ns pids pid tries
	for ns in $(namespaces "$prefix"); do
		# `ip netns del` only unmounts the name: a namespace with processes
		# in it lives on (with its veth) until they exit. Kill them first.
		for tries in $(seq 1 50); do
			pids=$(ip netns pids "$ns" 2>/dev/null || true)
			[ -n "$pids" ] || break
			for pid in $pids; do
				kill -KILL "$pid" 2>/dev/null || true
			done
			[ "$tries" -lt 50 ] || note "processes still in $ns after SIGKILL: $pids"
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null || true
	done
	local link
	for link in $(root_links "$prefix"); do
		ip link del "$link" 2>/dev/null || true
	done
	if ip link show "${prefix}br" >/dev/null 2>&1; then
		ip link del "${prefix}br"
	fi
	disallow_bridged "${prefix}br"
	rm -f "${MARKER_DIR:?}/${prefix}"
}

run_in() {
	local prefix=$1 i=$2
	shift 2
	check_prefix "$prefix"
	[[ "$i" =~ ^[0-9]+$ ]] || die "host index '$i' must be a number"
	[ "$#" -ge 1 ] || usage
	require
	exec ip netns exec "${prefix}${i}" "$@"
}

main() {
	[ "$#" -ge 1 ] || usage
	local cmd=$1
	shift
	case "$cmd" in
	up)
		if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then usage; fi
		up "$@"
		;;
	down)
		[ "$#" -eq 1 ] || usage
		down "$1"
		;;
	exec)
		[ "$#" -ge 3 ] || usage
		run_in "$@"
		;;
	*) usage ;;
	esac
}

main "$@"
