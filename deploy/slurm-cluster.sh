#!/usr/bin/env bash
# slurm-cluster.sh — a real Slurm cluster on this one machine, for Gleaner's
# tests, the demo and CI: munged, slurmctld and N slurmd daemons (nodes
# g1..gN), with a `batch` partition and a preemptible `glean` partition over
# all nodes (DESIGN.md, "Batch schedulers").
#
#   slurm-cluster.sh start DIR   create DIR, start the daemons, wait until all
#                                nodes are idle; prints export lines on stdout:
#                                  eval "$(deploy/slurm-cluster.sh start DIR)"
#   slurm-cluster.sh stop DIR    cancel every job, stop every daemon and job
#                                process of DIR's cluster, remove DIR
#                                (idempotent: a stopped or half-started
#                                cluster is fine)
#   slurm-cluster.sh env DIR     print the export lines again
#
# Environment (read by start):
#   GLEANER_SLURM_NODES        number of nodes, at least 4 (default 6)
#   GLEANER_SLURM_BF_INTERVAL  backfill interval in seconds (default 2)
#   GLEANER_SLURM_GRACE        glean's GraceTime in seconds (default 10)
#   GLEANER_SLURM_MIN_JOB_AGE  seconds a finished job stays listed (default 10)
#   GLEANER_SLURM_SIGNAL_USER  1 (default): SlurmctldParameters=
#                              preempt_send_user_signal; 0: without it
#   GLEANER_SLURM_START_TIMEOUT  seconds start waits for munge to answer and for
#                              idle nodes (default 120: slurmd registers in a
#                              second alone, in tens on a loaded 2-core machine)
#
# Everything lives in DIR: slurm.conf, the munge key and socket, state, spool,
# logs and pid files. Nothing under /etc, /run or /var is read or written, and
# ports are chosen free at start (under a lock, so two starts side by side do
# not pick the same), so two clusters (two test packages) can run side by
# side with different DIRs. Keep DIR short: munged's socket DIR/munge.sock
# must fit a unix socket address (108 bytes). Needs root.
#
# Design notes (Debian's slurm-wlm 22.05.8, checked in a 2-core container):
#
# - Several slurmd on one machine: Debian builds Slurm with
#   --enable-multiple-slurmd, so each node is one `slurmd -N gI` with its own
#   Port= in its NodeName line; %n in the spool, log and pid file names keeps
#   them apart. No network namespaces are needed.
# - Nodes declare fixed small resources (CPUs=1, RealMemory=1000) and
#   SlurmdParameters=config_overrides makes slurmd use those instead of the
#   real hardware, so six 1-CPU nodes fit on any machine.
# - ProctrackType=proctrack/linuxproc, TaskPlugin=task/none: no cgroups.
#   proctrack/cgroup works here (cgroup v1 freezer) but names its cgroups
#   freezer/slurm_<node>/uid_<uid>/job_<id>, so two clusters side by side,
#   both with node g1 and job 1, would share cgroups, and slurmd leaves
#   slurm_<node> behind; it also needs a writable cgroup tree, which CI
#   containers often lack. linuxproc finds a job's processes by their parent
#   chain: children in their own session (setsid) are found while their
#   parent lives; orphans (double fork) escape it and outlive the job, and
#   only `stop` kills them.
# - Preemption: a job in `batch` (PriorityTier=10) preempts jobs in `glean`
#   (PriorityTier=1, PreemptMode=CANCEL, GraceTime). What 22.05 does with a
#   batch job at preemption is not what its man page suggests: its
#   "SIGCONT+SIGTERM at once" goes to job steps only, never to the batch
#   script, so a pilot without steps hears nothing until its grace ends.
#   preempt_send_user_signal makes slurmctld send the job's own --signal
#   instead (B:TERM: the batch script alone, not its children) at the
#   moment of preemption. GraceTime + 2..11 s later (when slurmctld next
#   looks at the job) every process of the job gets SIGCONT+SIGTERM, and
#   SIGKILL KillWait later. The measurements are in
#   cluster/slurm/testdata/outputs/README.md.
# - Daemons run in the foreground (-D) in their own session (setsid), so the
#   caller's terminal or process-group signals do not reach them; start
#   records their pids in DIR/run, and stop signals those, then sweeps (see
#   pids_of_cluster) what the daemons or the jobs left.
# - start follows each daemon as its own child, by pid, from the fork on: a
#   forked shell that has yet to exec, or a process between two execs
#   (env, setsid, the daemon), does not show DIR in its command line yet,
#   and on a loaded machine that lasts long enough to be seen. A daemon has
#   exited when its process is gone or a zombie; start then reaps it and
#   reports its exit status (a signal: killed, not a configuration error)
#   with the tails of its log and stderr.
set -euo pipefail

readonly ME=slurm-cluster.sh
readonly SBIN=/usr/sbin
# Two starts side by side must not pick the same free port: the port choice
# and the daemons' binding happen under this lock.
readonly PORT_LOCK=/tmp/.gleaner-slurm-ports.lock

die() {
	echo "$ME: $*" >&2
	exit 1
}

note() {
	echo "$ME: $*" >&2
}

usage() {
	cat >&2 <<'EOF'
usage: slurm-cluster.sh start DIR   start a cluster in DIR; eval its stdout
       slurm-cluster.sh stop DIR    stop it and remove DIR
       slurm-cluster.sh env DIR     print the export lines again
EOF
	exit 2
}

# abs DIR: DIR as an absolute path without a trailing slash (DIR need not exist).
abs() {
	local d=$1
	[[ "$d" = /* ]] || d="$PWD/$d"
	while [[ "$d" = */ && "$d" != / ]]; do d=${d%/}; done
	printf '%s' "$d"
}

# int NAME VALUE MIN: VALUE must be an integer >= MIN.
int() {
	[[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge "$3" ] || die "$1=$2: want an integer >= $3"
}

exports() {
	local dir=$1
	echo "export SLURM_CONF=$dir/slurm.conf"
	echo "export GLEANER_SLURM_DIR=$dir"
}

# free_ports N: N distinct TCP ports that no socket uses now (any state, IPv4
# or IPv6, from /proc/net so iproute2 need not be installed), below the
# kernel's ephemeral range so outgoing connections do not take them before
# the daemons bind.
free_ports() {
	local want=$1 used port got=() lo=32768
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	((lo > 12000)) || die "the ephemeral port range starts at $lo: no room below it for the daemons' ports"
	used=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk '$2 ~ /:[0-9A-Fa-f]+$/ { n = split($2, a, ":"); print a[n] }' | sort -u |
		while read -r port; do echo $((16#$port)); done)
	while [ ${#got[@]} -lt "$want" ]; do
		port=$((10000 + RANDOM % (lo - 10000)))
		grep -qx "$port" <<<"$used" && continue
		[[ " ${got[*]} " == *" $port "* ]] && continue
		got+=("$port")
	done
	echo "${got[@]}"
}

# daemon NAME CMD...: run CMD in the foreground in its own session, stdout and
# stderr to DIR/log/NAME.out, its pid in DIR/run/NAME.pid. It stays this
# shell's child until start is done (disown_daemons), so that `wait` can
# tell how one that exited early ended.
daemon() {
	local name=$1
	shift
	# GLEANER_SLURM_DAEMON_OF marks the daemons and what they start (stop's
	# sweep); a GLEANER_SLURM_DIR of another cluster must not leak in.
	env -u GLEANER_SLURM_DIR SLURM_CONF="$DIR/slurm.conf" GLEANER_SLURM_DAEMON_OF="$DIR" \
		setsid "$@" </dev/null >>"$DIR/log/$name.out" 2>&1 9>&- &
	echo $! >"$DIR/run/$name.pid"
}

# disown_daemons: the daemons are no longer this shell's jobs (no "Killed"
# notice when stop kills them).
disown_daemons() {
	disown -a 2>/dev/null || true
}

# pid_of NAME: the pid of the daemon NAME started by `daemon`, if it still
# runs (a zombie does not). A child of this shell (start, or stop after a
# failed start) is ours whatever its command line says while it execs.
# Otherwise its command line must name DIR/: a pid file that outlived its
# process (a machine restart) must not make stop kill another process.
# Builtins only, no forks: this runs every 0.2 s while start waits.
pid_of() {
	local pid stat state ppid
	read -r pid 2>/dev/null <"$DIR/run/$1.pid" || return 1
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	read -r stat 2>/dev/null <"/proc/$pid/stat" || return 1
	# "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	read -r state ppid _ <<<"${stat##*) }"
	[[ "$state" != [ZX] ]] || return 1
	if [ "$ppid" != $$ ]; then
		[[ "$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")" == *"$DIR/"* ]] || return 1
	fi
	echo "$pid"
}

# alive NAME: the daemon NAME started by `daemon` still runs.
alive() {
	pid_of "$1" >/dev/null
}

# ended NAME: sets ENDED to how the daemon NAME, a child of this shell that
# has exited, ended ("exit status 1", "killed by SIGKILL"); empty if not
# known. Not in a subshell: only this shell can wait for its children.
ended() {
	local pid rc=0
	ENDED=""
	read -r pid 2>/dev/null <"$DIR/run/$1.pid" || return 0
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	alive "$1" && return 0
	wait "$pid" 2>/dev/null || rc=$?
	# 127: not a child of this shell (or exec failed; its stderr says).
	if ((rc > 128)); then
		ENDED="killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
	elif ((rc != 127)); then
		ENDED="exit status $rc"
	fi
}

# failed NAME WHY: stop with WHY, how NAME ended and the tails of its log and
# stderr, after tearing the half-started cluster down.
failed() {
	local name=$1 why=$2 f shown=0
	ended "$name"
	{
		echo "$ME: $name $why${ENDED:+ ($ENDED)}"
		# NAME.out (stderr) holds what came before the log file opened, such
		# as a bad slurm.conf; after that it repeats NAME.log.
		for f in "$DIR/log/$name.log" "$DIR/log/$name.out"; do
			[ -s "$f" ] || continue
			echo "--- tail of $f"
			tail -n 15 "$f"
			shown=1
			break
		done
		[ $shown = 1 ] || echo "--- $name wrote nothing to $DIR/log/$name.log nor to its stderr ($DIR/log/$name.out)"
		# A daemon that cannot authenticate says so in its log; munged says why.
		if [ "$name" != munged ] && [ -s "$DIR/log/munged.log" ] && grep -q -i 'error' "$DIR/log/munged.log"; then
			echo "--- tail of $DIR/log/munged.log"
			tail -n 5 "$DIR/log/munged.log"
		fi
	} >&2
	# Keep the logs for a person: copy them beside DIR before it goes.
	rm -rf "$DIR.failed-logs"
	cp -r "$DIR/log" "$DIR.failed-logs" 2>/dev/null && note "logs kept in $DIR.failed-logs"
	stop_cluster >/dev/null 2>&1 || true
	disown_daemons
	exit 1
}

# munge_answers: munged encodes a credential and decodes it again (what
# went wrong in DIR/log/munge-check.err).
munge_answers() {
	local cred
	cred=$(timeout 5 munge -n -S "$DIR/munge.sock" 2>"$DIR/log/munge-check.err") &&
		timeout 5 unmunge -S "$DIR/munge.sock" <<<"$cred" >/dev/null 2>>"$DIR/log/munge-check.err"
}

write_conf() {
	local ctld_port=$1
	shift
	local -a node_ports=("$@")
	local host user_signal="#SlurmctldParameters=preempt_send_user_signal"
	host=$(hostname -s)
	[ "$SIGNAL_USER" = 1 ] && user_signal=${user_signal#\#}
	cat >"$DIR/slurm.conf" <<EOF
# Written by deploy/slurm-cluster.sh for a one-machine test cluster.
ClusterName=gleaner
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.sock
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid.slurm
SlurmdPidFile=$DIR/run/slurmd.%n.pid.slurm
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$DIR/plugstack.conf
MailProg=/bin/true
# No accounting database, no job completion log, no MPI, no cgroups.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Whole nodes. Backfill plans every bf_interval seconds, to the second
# (bf_resolution), so tests see plans and holes change quickly.
SelectType=select/linear
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=$BF_INTERVAL,bf_resolution=1
# Jobs in batch preempt jobs in glean (PriorityTier). With
# preempt_send_user_signal the pilot's --signal=B:TERM@N reaches its batch
# script at preemption; GraceTime (+ KillWait + a backfill cycle) later every
# process gets SIGTERM, then SIGKILL after KillWait.
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
$user_signal
KillWait=5
MinJobAge=$MIN_JOB_AGE
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
Waittime=0
# Nodes report these resources, not the machine's (config_overrides).
SlurmdParameters=config_overrides
EOF
	local i
	for ((i = 1; i <= NODES; i++)); do
		echo "NodeName=g$i NodeHostname=$host NodeAddr=127.0.0.1 Port=${node_ports[i - 1]} CPUs=1 RealMemory=1000 State=UNKNOWN" >>"$DIR/slurm.conf"
	done
	cat >>"$DIR/slurm.conf" <<EOF
PartitionName=batch Nodes=g[1-$NODES] Default=YES PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP
PartitionName=glean Nodes=g[1-$NODES] Default=NO PriorityTier=1 PreemptMode=CANCEL GraceTime=$GRACE MaxTime=INFINITE State=UP
EOF
	: >"$DIR/plugstack.conf"
}

start_cluster() {
	NODES=${GLEANER_SLURM_NODES:-6}
	BF_INTERVAL=${GLEANER_SLURM_BF_INTERVAL:-2}
	GRACE=${GLEANER_SLURM_GRACE:-10}
	MIN_JOB_AGE=${GLEANER_SLURM_MIN_JOB_AGE:-10}
	SIGNAL_USER=${GLEANER_SLURM_SIGNAL_USER:-1}
	local timeout=${GLEANER_SLURM_START_TIMEOUT:-120}
	int GLEANER_SLURM_NODES "$NODES" 4
	int GLEANER_SLURM_BF_INTERVAL "$BF_INTERVAL" 1
	int GLEANER_SLURM_GRACE "$GRACE" 0
	int GLEANER_SLURM_MIN_JOB_AGE "$MIN_JOB_AGE" 2
	int GLEANER_SLURM_START_TIMEOUT "$timeout" 1
	[[ "$SIGNAL_USER" =~ ^[01]$ ]] || die "GLEANER_SLURM_SIGNAL_USER=$SIGNAL_USER: want 0 or 1"
	[ "$EUID" -eq 0 ] || die "must run as root (SlurmUser=root; slurmd starts jobs as their users)"
	local b i
	for b in munged mungekey slurmctld slurmd; do
		[ -x "$SBIN/$b" ] || die "$SBIN/$b is missing: install Debian's slurm-wlm and munge"
	done
	command -v sinfo >/dev/null || die "sinfo is missing: install Debian's slurm-client (slurm-wlm)"
	command -v munge >/dev/null && command -v unmunge >/dev/null || die "munge and unmunge are missing: install Debian's munge"
	[ ${#DIR} -le 80 ] || die "DIR $DIR is ${#DIR} bytes; keep it under 80 (unix socket paths fit 108)"
	if [ -e "$DIR" ]; then
		[ -z "$(ls -A "$DIR")" ] || die "$DIR exists and is not empty: stop that cluster first ($0 stop $DIR)"
	fi
	mkdir -p "$DIR"
	# munged wants its socket directory searchable by all; the key stays 0700.
	chmod 0755 "$DIR"
	mkdir -p "$DIR"/{state,spool,log,run,munge}
	chmod 0700 "$DIR/munge"
	for ((i = 1; i <= NODES; i++)); do mkdir -p "$DIR/spool/g$i"; done

	# munge: our own key and socket, nothing under /etc or /run.
	$SBIN/mungekey --create --keyfile="$DIR/munge/key" 2>>"$DIR/log/munged.out" ||
		failed munged "could not create a key"
	chmod 0600 "$DIR/munge/key"
	daemon munged $SBIN/munged --foreground --socket="$DIR/munge.sock" \
		--key-file="$DIR/munge/key" --pid-file="$DIR/munge/munged.pid" \
		--log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/seed"

	exec 9>"$PORT_LOCK"
	flock 9
	local -a ports
	read -r -a ports <<<"$(free_ports $((NODES + 1)))"
	write_conf "${ports[0]}" "${ports[@]:1}"

	# munge is up once it encodes and decodes a credential: the daemons
	# authenticate every message with it from their first.
	local deadline=$((SECONDS + timeout))
	until [ -S "$DIR/munge.sock" ] && munge_answers; do
		alive munged || failed munged "exited at start"
		if [ $SECONDS -ge $deadline ]; then
			[ -S "$DIR/munge.sock" ] || failed munged "did not create its socket $DIR/munge.sock in ${timeout} s"
			failed munged "does not encode and decode a credential after ${timeout} s: $(tail -n 1 "$DIR/log/munge-check.err" 2>/dev/null)"
		fi
		sleep 0.1
	done

	note "starting slurmctld on port ${ports[0]} and $NODES slurmd (g1..g$NODES) in $DIR"
	# -c: cold start, no saved state; -i: ignore state errors.
	daemon slurmctld $SBIN/slurmctld -D -c -i -f "$DIR/slurm.conf"
	for ((i = 1; i <= NODES; i++)); do
		daemon "slurmd.g$i" $SBIN/slurmd -D -N "g$i" -f "$DIR/slurm.conf"
	done

	# Wait until every node is idle; a daemon that dies fails at once.
	export SLURM_CONF="$DIR/slurm.conf"
	local idle=0 locked=1 out
	deadline=$((SECONDS + timeout))
	while :; do
		alive slurmctld || failed slurmctld "exited at start"
		for ((i = 1; i <= NODES; i++)); do
			alive "slurmd.g$i" || failed "slurmd.g$i" "exited at start"
		done
		# sinfo -N lists a node once per partition.
		out=$(timeout 5 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true)
		# Once slurmctld answers, every daemon has bound its port.
		if [ -n "$out" ] && [ "$locked" = 1 ]; then
			flock -u 9
			locked=0
		fi
		idle=$(awk '$2 == "idle"' <<<"$out" | wc -l)
		[ "$idle" -eq "$NODES" ] && break
		if [ $SECONDS -ge $deadline ]; then
			[ -n "$out" ] || failed slurmctld "did not answer sinfo in ${timeout} s"
			local bad
			bad=$(awk '$2 != "idle" {print $1; exit}' <<<"$out")
			failed "slurmd.${bad:-g1}" "not idle after ${timeout} s; sinfo says: $(tr '\n' ' ' <<<"$out")"
		fi
		sleep 0.2
	done
	exec 9>&-
	disown_daemons
	note "$NODES nodes idle after ${SECONDS} s"
	exports "$DIR"
}

# pids_of_cluster: pids of every process of DIR's cluster still running:
# whatever names DIR/ on its command line (the daemons; job scripts, which
# run slurmd's copy in DIR's spool); whatever the daemons started
# (slurmstepd, slurmscriptd), which inherits GLEANER_SLURM_DAEMON_OF=DIR;
# and job processes, orphans included, which carry SLURM_JOB_ID and DIR's
# SLURM_CONF (or GLEANER_SLURM_DIR, from the submitter). Zombies (no
# command line, no environment) are not listed. This script, its subshells
# and its callers (which may have SLURM_CONF set, but no SLURM_JOB_ID) are
# left out.
pids_of_cluster() {
	local p
	{
		grep -lzF -e "$DIR/" /proc/[0-9]*/cmdline 2>/dev/null || true
		grep -lzxF -e "GLEANER_SLURM_DAEMON_OF=$DIR" /proc/[0-9]*/environ 2>/dev/null || true
		# Job processes: both grep lists name them, so they appear twice.
		{
			grep -lzxF -e "SLURM_CONF=$DIR/slurm.conf" -e "GLEANER_SLURM_DIR=$DIR" /proc/[0-9]*/environ 2>/dev/null || true
			grep -lz '^SLURM_JOB_ID=' /proc/[0-9]*/environ 2>/dev/null || true
		} | sort | uniq -d
	} | sed -n 's|^/proc/\([0-9]*\)/.*|\1|p' | sort -un |
		while read -r p; do
			[ -d "/proc/$p" ] || continue
			# Ours: an ancestor of this script, or a descendant of it.
			[[ " $(ancestors $$) " == *" $p "* ]] && continue
			[[ " $(ancestors "$p") " == *" $$ "* ]] && continue
			echo "$p"
		done
}

# ancestors PID: PID and its ancestors up to (not including) init.
ancestors() {
	local q=$1
	while [ -n "$q" ] && [ "$q" -gt 1 ]; do
		printf '%s ' "$q"
		q=$(awk '/^PPid:/ {print $2}' "/proc/$q/status" 2>/dev/null || true)
	done
}

# signal_daemons SIG NAME...: send SIG to the daemons NAME still running.
signal_daemons() {
	local sig=$1 name pid
	shift
	for name in "$@"; do
		pid=$(pid_of "$name") || continue
		kill "-$sig" "$pid" 2>/dev/null || true
	done
}

# wait_gone SECONDS NAME...: wait until the daemons NAME have exited.
wait_gone() {
	local t=$(($1 * 10)) name
	shift
	while ((t-- > 0)); do
		local any=0
		for name in "$@"; do alive "$name" && any=1; done
		[ $any = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

stop_cluster() {
	[ -d "$DIR" ] || {
		note "$DIR does not exist: nothing to stop"
		return 0
	}
	# Refuse to remove a directory that is not a cluster's.
	[ -f "$DIR/slurm.conf" ] || [ -d "$DIR/run" ] || [ -z "$(ls -A "$DIR")" ] ||
		die "$DIR does not look like a cluster of this script (no slurm.conf or run/): not removing it"
	export SLURM_CONF="$DIR/slurm.conf"
	if [ -f "$DIR/slurm.conf" ] && alive slurmctld; then
		# Cancel every job so slurmd ends them (their steps, their processes).
		local jobs
		jobs=$(timeout 5 squeue -h -o %i 2>/dev/null || true)
		if [ -n "$jobs" ]; then
			# shellcheck disable=SC2086
			timeout 5 scancel $jobs 2>/dev/null || true
			local t=0
			while [ -n "$(timeout 5 squeue -h -o %i 2>/dev/null || true)" ] && ((t++ < 30)); do sleep 0.2; done
		fi
	fi
	local names=() f n
	for f in "$DIR"/run/slurmd.*.pid; do
		[ -e "$f" ] || continue
		n=${f##*/}
		names+=("${n%.pid}")
	done
	# munged goes with them: the daemons need no credentials to exit.
	signal_daemons TERM "${names[@]}" slurmctld munged
	wait_gone 10 "${names[@]}" slurmctld munged || signal_daemons KILL "${names[@]}" slurmctld munged
	# What is left (a stuck slurmstepd, a job's orphaned child) gets SIGKILL.
	local left t=0
	while left=$(pids_of_cluster) && [ -n "$left" ]; do
		if ((t++ >= 50)); then
			note "processes of $DIR survive SIGKILL:"
			# shellcheck disable=SC2086
			ps -o pid,stat,args -p "$(tr '\n' ',' <<<"$left" | sed 's/,$//')" >&2 || true
			die "not removing $DIR"
		fi
		# shellcheck disable=SC2086
		kill -KILL $left 2>/dev/null || true
		sleep 0.1
	done
	rm -rf "$DIR"
	note "stopped; $DIR removed"
}

# Sourced (by the script's own test), it defines its functions and stops here.
[[ "${BASH_SOURCE[0]}" == "$0" ]] || return 0
[ $# -eq 2 ] || usage
DIR=$(abs "$2")
[ "$DIR" != / ] || die "DIR must not be /"
case $1 in
start) start_cluster ;;
stop) stop_cluster ;;
env)
	[ -f "$DIR/slurm.conf" ] || die "$DIR has no slurm.conf: start a cluster there first"
	exports "$DIR"
	;;
*) usage ;;
esac
