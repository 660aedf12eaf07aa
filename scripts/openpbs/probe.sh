#!/usr/bin/env bash
# probe.sh — a PBS job that logs, with timestamps, every signal it and a child
# in its session receive, so a transcript shows what a pilot's agent hears
# when it is preempted or deleted (and how long until SIGKILL: the last
# "alive" line). Submitted by scripts/openpbs/record.sh:
#   qsub -q gleaner -v PROBE_LOG=FILE scripts/openpbs/probe.sh
log=${PROBE_LOG:-/tmp/probe-${PBS_JOBID:-$$}.log}
ts() { date +%s.%N | cut -c1-14; }
say() { echo "$(ts) $*" >>"$log"; }
say "script start job=${PBS_JOBID:-} pid=$$ pgid=$(ps -o pgid= $$ | tr -d ' ') sid=$(ps -o sid= $$ | tr -d ' ') run_count=${PBS_RUN_COUNT:-} vnodes=$(sort -u "${PBS_NODEFILE:-/dev/null}" 2>/dev/null | tr '\n' ' ')"
env | grep -E '^PBS_|^TMPDIR=' | sort | sed 's/^/     env /' >>"$log"
fast=0
for s in TERM INT HUP USR1 USR2 QUIT CONT; do
  trap "say 'script got SIG$s'; fast=1" "$s"
done
# A child in the job's session, as an agent's trainer would be.
bash -c '
  log=$1; ts() { date +%s.%N | cut -c1-14; }
  echo "$(ts) child start pid=$$" >>"$log"
  for s in TERM INT HUP USR1 USR2 QUIT CONT; do trap "echo \"\$(ts) child got SIG$s\" >>\"\$log\"" "$s"; done
  while :; do sleep 0.2; done' child "$log" &
# Heartbeat: every 5 s, every 0.2 s once a signal came; the last line before
# the log stops is the moment of SIGKILL (give or take 0.2 s).
while :; do
  if [ $fast = 1 ]; then sleep 0.2 & else sleep 5 & fi
  wait $! 2>/dev/null
  [ $fast = 1 ] && say alive
done
