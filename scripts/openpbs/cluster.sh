#!/usr/bin/env bash
# cluster.sh — a one-machine OpenPBS cluster for Gleaner's PBS tests: server
# (with its PostgreSQL data service), scheduler, comm and one mom whose
# vnodes HOST[0]..HOST[N-1] have one cpu each.
#
#   cluster.sh start    write pbs.conf and PBS_HOME if missing, start the
#                       daemons, configure server, queues, scheduler and vnodes
#                       (idempotent), wait until every vnode is free
#   cluster.sh stop     stop every PBS daemon (jobs and configuration persist
#                       in PBS_HOME; a later start picks them up)
#   cluster.sh status   daemons, server, queues, vnodes and jobs
#   cluster.sh env      export lines for a shell: eval "$(cluster.sh env)"
#
# Environment:
#   PBS_EXEC         where scripts/openpbs/build.sh installed OpenPBS (default /opt/pbs)
#   PBS_HOME         server, mom and scheduler state and logs (default /var/spool/pbs)
#   PBS_CONF_FILE    the configuration file (default /etc/pbs.conf: the
#                    commands read it without any environment)
#   GLEANER_PBS_HOST  the host name the daemons use (default: this machine's
#                    name if it resolves to an address other than loopback,
#                    else "gleaner-pbs", added to /etc/hosts with this
#                    machine's first non-loopback IPv4 address: PBS refuses
#                    a host whose name resolves only to 127.x, as containers'
#                    names often do)
#   GLEANER_PBS_VNODES         number of 1-cpu vnodes (default 8)
#   GLEANER_PBS_PREEMPT_ORDER  the scheduler's preempt_order (default R: a
#                              preempted pilot is requeued; D deletes it;
#                              never S: a suspended pilot keeps its node's
#                              memory and its trainer frozen)
#   GLEANER_PBS_KILL_DELAY     seconds between SIGTERM and SIGKILL when a job
#                              is deleted or preempted (queue kill_delay, default 10)
#
# Queues (see cluster/pbs/testdata/README.md for what each setting does):
#   workq    priority 100, the default queue: ordinary jobs; they preempt pilots
#   gleaner  priority 0, for pilots; max_run_soft 0 puts every running pilot
#            over its soft limit, so with preempt_prio "express_queue,
#            normal_jobs, queue_softlimits" pilots are the lowest preemption
#            class and any normal or express job preempts them
#   high     priority 200 (>= preempt_queue_prio 150): an express queue whose
#            jobs preempt everything below them
# The scheduler runs with strict_ordering (backfill around the top
# backfill_depth jobs, which get estimated.start_time/exec_vnode),
# by_queue false, job_sort_formula queue_priority.
#
# Runs as root with no init system: daemons start through PBS's own
# PBS_EXEC/libexec/pbs_init.d, which starts them directly.
set -euo pipefail

PBS_EXEC=${PBS_EXEC:-/opt/pbs}
PBS_HOME=${PBS_HOME:-/var/spool/pbs}
export PBS_CONF_FILE=${PBS_CONF_FILE:-/etc/pbs.conf}
VNODES=${GLEANER_PBS_VNODES:-8}
PREEMPT_ORDER=${GLEANER_PBS_PREEMPT_ORDER:-R}
KILL_DELAY=${GLEANER_PBS_KILL_DELAY:-10}
HOST=

die() { echo "cluster.sh: $*" >&2; exit 1; }
say() { echo "cluster.sh: $*" >&2; }
qmgr() { "$PBS_EXEC/bin/qmgr" -c "$1"; }

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (PBS daemons run as root)"; }
need_exec() {
  [ -x "$PBS_EXEC/sbin/pbs_server" ] || die "no OpenPBS in PBS_EXEC=$PBS_EXEC (build it: scripts/openpbs/build.sh SRC $PBS_EXEC)"
}

non_loopback() { # NAME: prints its first IPv4 address outside 127/8
  getent ahostsv4 "$1" 2>/dev/null | awk '$1 !~ /^127\./ {print $1; exit}'
}

pick_host() {
  if [ -n "${GLEANER_PBS_HOST:-}" ]; then
    HOST=$GLEANER_PBS_HOST
    [ -n "$(non_loopback "$HOST")" ] || die "GLEANER_PBS_HOST=$HOST does not resolve to an address other than loopback"
    return
  fi
  HOST=$(hostname -s)
  [ -n "$(non_loopback "$HOST")" ] && return
  local ip
  ip=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | grep -v '^127\.' | head -1)
  [ -n "$ip" ] || die "$HOST resolves only to loopback and this machine has no other IPv4 address; PBS needs one"
  HOST=gleaner-pbs
  sed -i '/# gleaner scripts\/openpbs\/cluster.sh$/d' /etc/hosts
  printf '%s\t%s\t# gleaner scripts/openpbs/cluster.sh\n' "$ip" "$HOST" >>/etc/hosts
  say "$(hostname -s) resolves only to loopback: added '$ip $HOST' to /etc/hosts"
}

set_conf() { # KEY VALUE
  if grep -q "^$1=" "$PBS_CONF_FILE"; then sed -i "s|^$1=.*|$1=$2|" "$PBS_CONF_FILE"; else echo "$1=$2" >>"$PBS_CONF_FILE"; fi
}

write_conf() {
  if [ -f "$PBS_CONF_FILE" ] && grep -q "^PBS_EXEC=$PBS_EXEC\$" "$PBS_CONF_FILE" \
     && grep -q "^PBS_HOME=$PBS_HOME\$" "$PBS_CONF_FILE" && [ -d "$PBS_HOME/server_priv" ]; then
    say "using $PBS_CONF_FILE (PBS_HOME $PBS_HOME)"
  else
    say "pbs_postinstall: writing $PBS_CONF_FILE and creating PBS_HOME $PBS_HOME"
    local version
    version=$("$PBS_EXEC/bin/qstat" --version 2>/dev/null | sed 's/.*= *//')
    # server VERSION PBS_EXEC PBS_HOME DB_USER: the data service runs as
    # Debian's postgres user (PBS refuses root).
    id postgres >/dev/null 2>&1 || die "no 'postgres' user: install Debian's postgresql package (build.sh does)"
    rm -f "$PBS_CONF_FILE"
    "$PBS_EXEC/libexec/pbs_postinstall" server "$version" "$PBS_EXEC" "$PBS_HOME" postgres \
      >"$PBS_HOME.postinstall.log" 2>&1 || { cat "$PBS_HOME.postinstall.log" >&2; die "pbs_postinstall failed"; }
  fi
  # One machine: server, scheduler, comm and mom all here.
  local k
  for k in PBS_SERVER PBS_MOM_NODE_NAME PBS_LEAF_NAME; do set_conf $k "$HOST"; done
  for k in PBS_START_SERVER PBS_START_SCHED PBS_START_COMM PBS_START_MOM; do set_conf $k 1; done
  # Jobs' output files are copied with cp, not pbs_rcp/scp: one machine.
  local mc=$PBS_HOME/mom_priv/config
  grep -q '^\$usecp' "$mc" || { echo '$usecp *:/ /' >>"$mc"; say "mom: \$usecp *:/ / in $mc"; }
}

vnode_defs() {
  local f=$PBS_HOME/gleaner_vnodes.def i
  {
    echo '$configversion 2'
    echo "$HOST: resources_available.ncpus = 0"
    for ((i = 0; i < VNODES; i++)); do
      echo "$HOST[$i]: resources_available.ncpus = 1"
      echo "$HOST[$i]: sharing = default_excl"
    done
  } >"$f"
  # A mom's vnodes come from its version-2 configuration files.
  if ! cmp -s "$f" <("$PBS_EXEC/sbin/pbs_mom" -s show gleaner_vnodes 2>/dev/null); then
    say "vnodes: pbs_mom -s insert gleaner_vnodes ($VNODES vnodes of 1 cpu: $HOST[0..$((VNODES - 1))])"
    "$PBS_EXEC/sbin/pbs_mom" -s remove gleaner_vnodes >/dev/null 2>&1 || true
    "$PBS_EXEC/sbin/pbs_mom" -s insert gleaner_vnodes "$f"
    return 0
  fi
  return 1
}

wait_for() { # SECONDS WHAT CMD...
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || die "timed out after ${t}s waiting for $what"
    sleep 1
  done
}

up_vnodes() {
  local n
  # pbsnodes -a lists hosts; -av their vnodes.
  n=$("$PBS_EXEC/bin/pbsnodes" -av 2>/dev/null | awk -v h="$HOST[" '
    /^[^ ]/ { v = index($0, h) == 1 } v && $1 == "state" && $3 !~ /down|offline|unknown|stale/ { n++ } END { print n + 0 }')
  [ "${n:-0}" -ge "$VNODES" ]
}

configure() {
  say "configuring server, queues and scheduler with qmgr"
  # Root may submit jobs (the live tests run as root); jobs stay listed (qstat -x) an hour.
  qmgr "set server acl_roots = root"
  qmgr "set server flatuid = True"
  qmgr "set server job_history_enable = True"
  qmgr "set server job_history_duration = 01:00:00"
  # Backfill: the top 10 jobs get a planned start (estimated.start_time,
  # estimated.exec_vnode); smaller jobs run around them.
  qmgr "set server backfill_depth = 10"
  qmgr "set server job_sort_formula = queue_priority"
  qmgr "set server scheduler_iteration = 10"
  qmgr "set server node_fail_requeue = 60"

  qmgr "list queue workq" >/dev/null 2>&1 || qmgr "create queue workq queue_type = execution"
  qmgr "set queue workq priority = 100"
  qmgr "set queue workq enabled = True"
  qmgr "set queue workq started = True"
  qmgr "set server default_queue = workq"

  qmgr "list queue gleaner" >/dev/null 2>&1 || qmgr "create queue gleaner queue_type = execution"
  qmgr "set queue gleaner priority = 0"
  # Every running pilot is over this soft limit: its jobs fall out of
  # preempt_prio's normal_jobs class into the lowest one, so normal jobs
  # (workq) and express jobs (high) preempt them.
  qmgr 'set queue gleaner max_run_soft = "[o:PBS_ALL=0]"'
  qmgr "set queue gleaner kill_delay = $KILL_DELAY"
  qmgr "set queue gleaner enabled = True"
  qmgr "set queue gleaner started = True"

  qmgr "list queue high" >/dev/null 2>&1 || qmgr "create queue high queue_type = execution"
  qmgr "set queue high priority = 200"
  qmgr "set queue high enabled = True"
  qmgr "set queue high started = True"
  qmgr "set queue workq kill_delay = $KILL_DELAY"
  qmgr "set queue high kill_delay = $KILL_DELAY"

  # Preemption (scheduler attributes since OpenPBS 20; sched_config before).
  qmgr "set sched preempt_queue_prio = 150"
  # queue_softlimits must be listed: a job over a soft limit is in that
  # class only if preempt_prio names it (else it counts as normal_jobs).
  qmgr 'set sched preempt_prio = "express_queue, normal_jobs, queue_softlimits"'
  qmgr "set sched preempt_order = $PREEMPT_ORDER"
  qmgr "set sched preempt_sort = min_time_since_start"

  local sc=$PBS_HOME/sched_priv/sched_config
  sed -i -e 's/^strict_ordering:.*/strict_ordering: true\tALL/' \
    -e 's/^by_queue:.*/by_queue: false\t\tALL/' \
    -e 's/^preemptive_sched:.*/preemptive_sched: true\tALL/' "$sc"
  grep -q '^by_queue: false' "$sc" || die "could not set by_queue in $sc"
  # The scheduler rereads sched_config on SIGHUP.
  kill -HUP "$(cat "$PBS_HOME/sched_priv/sched.lock" 2>/dev/null)" 2>/dev/null || true

  qmgr "list node $HOST" >/dev/null 2>&1 || qmgr "create node $HOST"
  qmgr "set server scheduling = True"
}

cmd_start() {
  need_root start; need_exec
  pick_host
  write_conf
  local changed=0
  vnode_defs && changed=1
  say "starting daemons: $PBS_EXEC/libexec/pbs_init.d start"
  "$PBS_EXEC/libexec/pbs_init.d" start >&2 || die "pbs_init.d start failed; logs in $PBS_HOME/{server_logs,sched_logs,mom_logs,comm_logs}"
  wait_for 60 "the server (qstat -B)" "$PBS_EXEC/bin/qstat" -B
  configure
  if [ $changed = 1 ]; then
    # A running mom reads new vnode definitions on SIGHUP.
    kill -HUP "$(cat "$PBS_HOME/mom_priv/mom.lock")" 2>/dev/null || true
  fi
  say "waiting for $VNODES vnodes to be up"
  wait_for 120 "$VNODES vnodes up (pbsnodes -av)" up_vnodes
  say "up: server $HOST, queues workq gleaner high, vnodes $HOST[0..$((VNODES - 1))]"
  say "conf $PBS_CONF_FILE; logs $PBS_HOME/{server_logs,sched_logs,mom_logs,comm_logs}/YYYYMMDD; jobs' output in the submit directory"
  say "commands in $PBS_EXEC/bin: eval \"\$($0 env)\"; stop: $0 stop"
}

cmd_stop() {
  need_root stop
  [ -x "$PBS_EXEC/libexec/pbs_init.d" ] || die "no $PBS_EXEC/libexec/pbs_init.d"
  say "stopping daemons: $PBS_EXEC/libexec/pbs_init.d stop"
  "$PBS_EXEC/libexec/pbs_init.d" stop >&2 || true
}

cmd_status() {
  need_exec
  "$PBS_EXEC/libexec/pbs_init.d" status || true
  "$PBS_EXEC/bin/qstat" -B || return 0
  "$PBS_EXEC/bin/qstat" -Q
  "$PBS_EXEC/bin/pbsnodes" -aSj
  "$PBS_EXEC/bin/qstat" -answ1 || true
}

cmd_env() {
  HOST=$(sed -n 's/^PBS_SERVER=//p' "$PBS_CONF_FILE" 2>/dev/null)
  echo "export PBS_EXEC='$PBS_EXEC' PBS_HOME='$PBS_HOME' PBS_CONF_FILE='$PBS_CONF_FILE' PBS_SERVER='$HOST'"
  echo "export PATH='$PBS_EXEC/bin':\"\$PATH\""
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
*) die "usage: $0 start|stop|status|env" ;;
esac
