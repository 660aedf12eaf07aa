#!/usr/bin/env bash
# record.sh — record the transcripts in cluster/pbs/testdata from the cluster
# that scripts/openpbs/cluster.sh runs: what the PBS commands a Gleaner
# adapter calls print, for its parsing tests, and what a pilot hears when it
# is preempted or deleted.
#
#   scripts/openpbs/record.sh OUT
#
# OUT (cluster/pbs/testdata: files there that record.sh does not write, such
# as the fuzz corpus, are left alone) gets, for each transcript NAME: NAME.stdout (verbatim), NAME.stderr
# (stderr, when there was any), and a line "NAME<TAB>exit status<TAB>command"
# in OUT/transcripts.tsv. Job ids, times and host names are left as PBS printed
# them, but for this checkout's absolute path, made relative. Probe logs (scripts/openpbs/probe.sh) are copied as probe-*.log.
#
# It deletes every job and reservation on the cluster first and at the end,
# and leaves the scheduler's preempt_order as it found it. Needs root; takes
# about 5 minutes. Environment: as cluster.sh (PBS_EXEC, PBS_CONF_FILE);
# WORK (scratch folder, default /tmp/gleaner-pbs-record).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
mkdir -p "$1"; OUT=$(cd "$1" && pwd)
eval "$("$here/cluster.sh" env)"
WORK=${WORK:-/tmp/gleaner-pbs-record}
mkdir -p "$WORK" "$OUT"
: >"$OUT/transcripts.tsv"
cd "$WORK"
HOST=$PBS_SERVER

log() { echo "record.sh: $*" >&2; }
# rec NAME CMD...: run CMD, keep its stdout, stderr and exit status.
rec() {
  local name=$1 rc=0; shift
  "$@" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr" || rc=$?
  [ -s "$OUT/$name.stderr" ] || rm -f "$OUT/$name.stderr"
  [ -s "$OUT/$name.stdout" ] || rm -f "$OUT/$name.stdout"
  local cmd; cmd=$(printf '%q ' "$@" | sed "s|$here/|scripts/openpbs/|g; s| $||")
  printf '%s\t%s\t%s\n' "$name" "$rc" "$cmd" >>"$OUT/transcripts.tsv"
  log "$name: $cmd (exit $rc)"
}
state() { qstat -x -f -F json "$1" 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin)["Jobs"]; print(next(iter(j.values()))["job_state"])' 2>/dev/null || echo "?"; }
wait_state() { # JOB STATE SECONDS
  local end=$((SECONDS + $3))
  until [ "$(state "$1")" = "$2" ]; do
    [ $SECONDS -lt $end ] || { log "timed out waiting for $1 to be $2 (is $(state "$1"))"; return 1; }
    sleep 0.5
  done
}
has_estimate() { qstat -f "$1" 2>/dev/null | grep -q 'estimated.start_time'; }
# Processes of probe jobs still alive (their sessions), as "ps" lines.
leftovers() {
  local sids
  sids=$(ps -eo sid=,args= | grep -F -- "$WORK/probe-" | grep -v grep | awk '{print $1}' | sort -u | tr '\n' ' ')
  [ -n "${sids// /}" ] || return 0
  ps -eo pid=,sid=,stat=,etimes=,comm= | awk -v s=" $sids " 'index(s, " " $2 " ") && $3 !~ /Z/'
}
clean() {
  local j r p
  j=$(qselect -s QRHWTESB 2>/dev/null | tr '\n' ' ') || true
  [ -n "${j// /}" ] && qdel -W force $j 2>/dev/null || true
  for r in $(pbs_rstat 2>/dev/null | awk 'NR>2 {print $1}'); do pbs_rdel "$r" || true; done
  local end=$((SECONDS + 60))
  while [ -n "$(qselect -s QRHWTESB 2>/dev/null)" ] && [ $SECONDS -lt $end ]; do sleep 1; done
  # Probe processes that outlived their job (see README: no SIGKILL here).
  for p in $(leftovers | awk '$5 == "bash" {print $1}'); do kill -KILL "$p" 2>/dev/null || true; done
}
pilot() { # NAME WALLTIME [QUEUE]: submit a probe pilot, print its id
  qsub -q "${3:-gleaner}" -N "$1" -l select=1:ncpus=1 -l walltime="$2" -j oe -o "$WORK/$1.out" \
    -v PROBE_LOG="$WORK/probe-$1.log" "$here/probe.sh"
}

order0=$(qmgr -c 'list sched' | sed -n 's/^[[:space:]]*preempt_order = //p')
log "cleaning the cluster"
clean
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK"

# --- configuration -----------------------------------------------------------
rec version qstat --version
rec qmgr_list_queue_gleaner qmgr -c 'list queue gleaner'
rec qmgr_list_queue_high qmgr -c 'list queue high'
rec qmgr_print_server qmgr -c 'print server'
rec qmgr_list_sched qmgr -c 'list sched'
rec qmgr_list_sched_preempt_order qmgr -c 'list sched default preempt_order'
rec pbsnodes_idle_json pbsnodes -a -F json
rec pbsnodes_v_idle_json pbsnodes -av -F json
rec pbsnodes_v_idle pbsnodes -av
rec qstat_json_no_jobs qstat -f -F json

# --- a plan: a blocker, pilots, a big job that must wait, backfill -----------
A=$(qsub -q workq -N blocker -l select=4:ncpus=1 -l walltime=00:20:00 -- /bin/sleep 1200)
rec qsub_pilot qsub -q gleaner -N pilot1 -l select=1:ncpus=1 -l walltime=00:10:00 -j oe -o "$WORK/pilot1.out" -v PROBE_LOG="$WORK/probe-pilot1.log" "$here/probe.sh"
P1=$(cat "$OUT/qsub_pilot.stdout")
P2=$(pilot pilot2 00:10:00)
wait_state "$A" R 60; wait_state "$P1" R 60; wait_state "$P2" R 60
B=$(qsub -q workq -N big -l select=8:ncpus=1 -l walltime=00:10:00 -- /bin/sleep 600)
end=$((SECONDS + 60)); until has_estimate "$B" || [ $SECONDS -gt $end ]; do sleep 1; done
# Backfill: one pilot ends before B's planned start, one would run past it.
P3=$(pilot pilot3-short 00:05:00)
P4=$(pilot pilot4-long 00:40:00)
sleep 15
rec qstat_json_plan qstat -f -F json
rec qstat_json_running_pilot qstat -f -F json "$P1"
rec qstat_json_queued_estimated qstat -f -F json "$B"
rec qstat_json_queue_gleaner qstat -f -F json gleaner
rec qstat_plan qstat -answ1
rec qstat_T qstat -T
rec pbsnodes_busy_json pbsnodes -av -F json
rec pbsnodes_vnode_json pbsnodes -v "$HOST[0]" -F json

# --- a reservation -----------------------------------------------------------
rec pbs_rsub pbs_rsub -N maint -R "$(date -d '+2 hours' +%H%M)" -D 01:00:00 -l select=2:ncpus=1
R=$(awk '{print $1}' "$OUT/pbs_rsub.stdout")
end=$((SECONDS + 60)); until pbs_rstat -f "$R" | grep -q 'reserve_state = RESV_CONFIRMED' || [ $SECONDS -gt $end ]; do sleep 1; done
rec pbs_rstat pbs_rstat
rec pbs_rstat_B pbs_rstat -B
rec pbs_rstat_f pbs_rstat -f
rec pbs_rstat_f_one pbs_rstat -f "$R"
rec pbsnodes_resv_json pbsnodes -av -F json
rec pbs_rstat_unknown pbs_rstat -f R9999."$HOST"

# --- errors and signals --------------------------------------------------------
rec qsub_bad_queue qsub -q nosuch -- /bin/true
rec qsub_too_many_cpus qsub -q gleaner -l select=1:ncpus=64 -- /bin/true
rec qsub_bad_resource qsub -q gleaner -l select=1:nosuchres=1 -- /bin/true
rec qdel_unknown qdel 9999."$HOST"
rec qsig_usage qsig
rec qsig_unknown qsig -s TERM 9999."$HOST"
rec qsig_bad_signal qsig -s NOSUCH "$P1"
rec qsig_usr1_pilot qsig -s USR1 "$P1"
rec qstat_unknown qstat -f -F json 9999."$HOST"
sleep 2
cp "$WORK/probe-pilot1.log" "$OUT/probe-qsig-usr1.log"
qdel "$A" "$B"
wait_state "$A" F 60 || true
rec qdel_finished qdel "$A"
rec qstat_json_finished qstat -x -f -F json "$A"
rec qdel_running_pilot qdel "$P2"
wait_state "$P2" F 60 || true
rec qstat_json_deleted_pilot qstat -x -f -F json "$P2"
pbs_rdel "$R"
clean

# --- preemption ----------------------------------------------------------------
preempt() { # TAG ORDER QUEUE: fill the vnodes with pilots, submit a job in QUEUE needing one
  local tag=$1 order=$2 queue=$3 p=() i j victim=
  qmgr -c "set sched preempt_order = $order"
  for ((i = 0; i < 8; i++)); do p+=("$(pilot "$tag-p$i" 00:30:00)"); done
  for j in "${p[@]}"; do wait_state "$j" R 120; done
  sleep 6 # the probes' children start
  rec "preempt_${tag}_before_json" qstat -f -F json "${p[@]}"
  local H; H=$(qsub -q "$queue" -N "$tag-job" -l select=1:ncpus=1 -l walltime=00:05:00 -- /bin/sleep 45)
  echo "$(date +%s.%N | cut -c1-14) submitted $H to $queue" >"$WORK/probe-$tag-submit.log"
  local end=$((SECONDS + 60))
  while [ -z "$victim" ] && [ $SECONDS -lt $end ]; do
    for j in "${p[@]}"; do [ "$(state "$j")" != R ] && victim=$j && break; done
    sleep 0.3
  done
  [ -n "$victim" ] || { log "$tag: no pilot was preempted"; return 1; }
  echo "$(date +%s.%N | cut -c1-14) $victim seen in state $(state "$victim")" >>"$WORK/probe-$tag-submit.log"
  rec "preempt_${tag}_victim_json" qstat -x -f -F json "$victim"
  wait_state "$H" R 60 || true
  sleep $((${KILL_DELAY:-10} + 5))
  rec "preempt_${tag}_after_json" qstat -x -f -F json "$victim" "$H"
  rec "preempt_${tag}_tracejob" tracejob -n 1 "$victim"
  # Did kill_delay's SIGKILL come? The probes' processes still alive now:
  rec "preempt_${tag}_leftover_processes" leftovers
  local name; name=$(qstat -x -f "$victim" | sed -n 's/^ *Job_Name = //p')
  cp "$WORK/probe-$name.log" "$OUT/probe-preempt-$tag.log" 2>/dev/null || true
  cat "$WORK/probe-$tag-submit.log" >>"$OUT/probe-preempt-$tag.log"
  clean
}
preempt high-requeue R high || clean
preempt workq-requeue R workq || clean
preempt high-delete D high || clean
qmgr -c "set sched preempt_order = ${order0:-R}"

# qdel of a running pilot: SIGTERM, kill_delay, SIGKILL
P=$(pilot qdel-p 00:30:00)
wait_state "$P" R 60; sleep 6
echo "$(date +%s.%N | cut -c1-14) qdel $P" >"$WORK/qdel.log"
qdel "$P"
wait_state "$P" F 60 || true
cat "$WORK/probe-qdel-p.log" "$WORK/qdel.log" >"$OUT/probe-qdel.log"
rec qdel_tracejob tracejob -n 1 "$P"
sleep $((${KILL_DELAY:-10} + 5))
rec qdel_leftover_processes leftovers
clean
# The one edit: this checkout's absolute path (in Submit_arguments) becomes
# relative, so the transcripts do not name the recording machine's folders.
repo=$(cd "$here/../.." && pwd)
find "$OUT" -maxdepth 1 -type f \( -name '*.stdout' -o -name '*.stderr' -o -name '*.log' \) -exec sed -i "s|$repo/||g" {} +
log "done: $OUT"
