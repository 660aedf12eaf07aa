#!/bin/sh
# Prepares a running Temporal server for Gleaner: creates the namespace if
# it is missing, then registers Gleaner's search attributes in it. The
# attributes are the arguments, NAME=TYPE each (docker-compose.yml lists
# them; internal/uitest checks that list against workflows.SearchAttributes).
# Idempotent: an attribute registered already with the same type is fine
# (the temporal CLI says so and exits 0); one with another type is an error.
#
# Environment (read by the temporal CLI too): TEMPORAL_ADDRESS,
# TEMPORAL_NAMESPACE; GLEANER_NAMESPACE_RETENTION (default 72h) for a new
# namespace. Runs in temporalio/admin-tools, or anywhere with the temporal
# CLI: TEMPORAL_ADDRESS=localhost:7233 sh deploy/setup-temporal.sh GleanerCampaign=Keyword ...
set -eu

addr=${TEMPORAL_ADDRESS:-temporal:7233}
ns=${TEMPORAL_NAMESPACE:-default}
retention=${GLEANER_NAMESPACE_RETENTION:-72h}
if [ $# -eq 0 ]; then
	echo "usage: $0 NAME=TYPE ..." >&2
	exit 2
fi

# Retries "$@" every 2 s, up to $tries times; exit status 2 is final.
# (sh has no local variables: retry_rc must not be the callers' rc.)
retry() {
	tries=$1
	shift
	i=1
	until "$@"; do
		retry_rc=$?
		if [ "$retry_rc" -eq 2 ] || [ "$i" -ge "$tries" ]; then
			return "$retry_rc"
		fi
		i=$((i + 1))
		sleep 2
	done
}

echo "setup-temporal: waiting for Temporal at $addr"
if ! retry 90 temporal operator cluster health --address "$addr" >/dev/null 2>&1; then
	echo "setup-temporal: Temporal at $addr is not serving" >&2
	exit 1
fi

if temporal operator namespace describe --address "$addr" --namespace "$ns" >/dev/null 2>&1; then
	echo "setup-temporal: namespace $ns exists"
else
	echo "setup-temporal: creating namespace $ns (retention $retention)"
	temporal operator namespace create --address "$addr" --namespace "$ns" --retention "$retention" ||
		temporal operator namespace describe --address "$addr" --namespace "$ns" >/dev/null
fi

# A new namespace takes a few seconds to reach every frontend's cache:
# registering attributes is retried until it succeeds or says why not.
register() {
	if out=$(temporal operator search-attribute create --address "$addr" --namespace "$ns" --name "$1" --type "$2" 2>&1); then
		return 0
	fi
	case $out in
	*"different type"*)
		echo "setup-temporal: $out" >&2
		fail=1
		return 2
		;;
	*"already exists"*) return 0 ;;
	esac
	echo "setup-temporal: $1: $out (retrying)" >&2
	return 1
}

fail=0
for a in "$@"; do
	name=${a%%=*}
	typ=${a#*=}
	if [ -z "$name" ] || [ "$name" = "$a" ] || [ -z "$typ" ]; then
		echo "setup-temporal: $a: want NAME=TYPE" >&2
		exit 2
	fi
	rc=0
	retry 30 register "$name" "$typ" || rc=$?
	case $rc in
	0) echo "setup-temporal: search attribute $name ($typ)" ;;
	2) ;; # registered with another type: reported, and the script fails below
	*)
		echo "setup-temporal: could not register $name" >&2
		exit 1
		;;
	esac
done
if [ "$fail" -ne 0 ]; then
	exit 1
fi
temporal operator search-attribute list --address "$addr" --namespace "$ns"
echo "setup-temporal: done"
