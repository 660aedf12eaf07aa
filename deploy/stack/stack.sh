#!/usr/bin/env bash
# The stack of docker-compose.yml on this machine, without Docker:
# PostgreSQL 15 (Debian's packages) in a private cluster → the Temporal
# databases (deploy/setup-schema.sh with temporal-sql-tool) → the Temporal
# server built from its Go module at the version compose pins → the
# namespace and Gleaner's search attributes (deploy/setup-temporal.sh with
# the temporal CLI) → the Temporal web UI built from its Go module → a
# Gleaner worker and a Gleaner agent. `make stack`,
# `make stack-stop` and `make stack-status` call it; docs/deploy.md
# ("A live stack without Docker") explains it.
#
#   stack.sh start [COMPONENT...]   start what is not running (all: in order, with the one-shots)
#   stack.sh stop [COMPONENT...]    stop, in reverse order (agents get their stop timeout)
#   stack.sh restart COMPONENT...   stop, then start (postgres: pg_ctl restart; GLEANER_STACK_PG_MODE)
#   stack.sh kill COMPONENT...      SIGKILL (postgres: pg_ctl stop -m immediate), as a crash would
#   stack.sh status                 what runs, where
#   stack.sh env                    export lines for the CLI: eval "$(deploy/stack/stack.sh env)"
#   stack.sh build                  build the Temporal server, temporal-sql-tool and the UI only
#
# Components: postgres, temporal, ui, worker, agent (the schema and the
# namespace set-up are one-shots that a full `start` runs every time; both
# are idempotent). Everything lives in GLEANER_STACK_DIR: the database, the
# logs (logs/), the pid files (run/) and Gleaner's data directory (data/).
#
# Environment (defaults in brackets; the ports so that tests can use free ones):
#   GLEANER_STACK_DIR [bin/stack]            state, logs, pid files
#   GLEANER_STACK_BIN [bin/stack/temporal-V] temporal-server and temporal-sql-tool, built once
#   GLEANER_STACK_UI [1]                     0: no web UI (nor its build)
#   GLEANER_STACK_UI_BIN [bin/stack/ui-V]    temporal-ui-server, built once
#   GLEANER_STACK_UI_PORT [8080]             the web UI, on GLEANER_STACK_BIND_IP
#   GLEANER_BIN [bin/gleaner]                the gleaner binary (built when missing)
#   GLEANER_STACK_PG_BIN [/usr/lib/postgresql/15/bin]
#   GLEANER_STACK_PG_PORT [55432]            PostgreSQL, on GLEANER_STACK_PG_HOST [127.0.0.1]
#   GLEANER_STACK_PG_USER [postgres]         the system user PostgreSQL runs as when started by root
#   GLEANER_STACK_PG_MODE [fast]             shutdown mode of `restart postgres`: smart, fast or immediate
#   POSTGRES_PASSWORD [temporal]             the password of PostgreSQL's user temporal, as in compose
#   GLEANER_STACK_BIND_IP [127.0.0.1]        Temporal's services listen here (0.0.0.0: agents on other hosts)
#   GLEANER_STACK_FRONTEND_PORT [7233], GLEANER_STACK_FRONTEND_HTTP_PORT [7243],
#   GLEANER_STACK_HISTORY_PORT [7234], GLEANER_STACK_MATCHING_PORT [7235],
#   GLEANER_STACK_WORKER_PORT [7239], GLEANER_STACK_MEMBERSHIP_PORTS [6933,6934,6935,6939]
#                                            (frontend, history, matching, worker; below 32768:
#                                            Temporal stores them in a smallint column)
#   TEMPORAL_NAMESPACE [default], GLEANER_NAMESPACE_RETENTION [72h], GLEANER_TASK_QUEUE [gleaner],
#   GLEANER_POOL [default], GLEANER_NODE_PREFIX, GLEANER_ADVERTISE_ADDR   as in compose
#   GLEANER_DATA [$GLEANER_STACK_DIR/data]   the worker's and the agent's --data-dir
#   GLEANER_STACK_AGENT_SLOTS [4]            the agent's --slots (CPU slots, --gpus none)
#   GLEANER_STACK_WORKER_FLAGS, GLEANER_STACK_AGENT_FLAGS   more flags for either
#   GLEANER_STACK_AGENT_GRACE [135]          seconds `stop` waits for the agent before SIGKILL
#   TEMPORAL_CLI                             the temporal CLI (else on PATH, else GOPATH/bin)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
compose=$repo/docker-compose.yml

# Gleaner's search attributes, NAME=TYPE, exactly workflows.SearchAttributes
# (internal/uitest.TestStackSearchAttributes keeps them equal, as it does
# compose's temporal-setup command).
SEARCH_ATTRIBUTES=(
	GleanerCampaign=Keyword
	GleanerKind=Keyword
	GleanerStatus=Keyword
	GleanerBestScore=Double
	GleanerHypervolume=Double
	GleanerTrialsDone=Int
	GleanerTrialsRunning=Int
	GleanerTrial=Keyword
	GleanerPool=Keyword
)

die() {
	echo "stack: $*" >&2
	exit 1
}
say() { echo "stack: $*"; }

# The versions are compose's (temporalio/server:V, temporalio/ui:V), so the
# two stacks cannot drift apart.
compose_version() {
	local v
	v=$(grep -Eo "image: *temporalio/$1:[0-9]+\.[0-9]+\.[0-9]+" "$compose" | head -n 1 | sed 's/.*://')
	[ -n "$v" ] || die "no temporalio/$1:X.Y.Z image in $compose"
	echo "$v"
}

TEMPORAL_VERSION=$(compose_version server)
UI_VERSION=$(compose_version ui)
STACK_DIR=${GLEANER_STACK_DIR:-$repo/bin/stack}
BIN_DIR=${GLEANER_STACK_BIN:-$repo/bin/stack/temporal-$TEMPORAL_VERSION}
UI=${GLEANER_STACK_UI:-1}
UI_DIR=${GLEANER_STACK_UI_BIN:-$repo/bin/stack/ui-$UI_VERSION}
GLEANER=${GLEANER_BIN:-$repo/bin/gleaner}
PG_BIN=${GLEANER_STACK_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_HOST=${GLEANER_STACK_PG_HOST:-127.0.0.1}
PG_PORT=${GLEANER_STACK_PG_PORT:-55432}
PG_OS_USER=${GLEANER_STACK_PG_USER:-postgres}
PG_PASSWORD=${POSTGRES_PASSWORD:-temporal}
BIND_IP=${GLEANER_STACK_BIND_IP:-127.0.0.1}
FRONTEND_PORT=${GLEANER_STACK_FRONTEND_PORT:-7233}
NAMESPACE=${TEMPORAL_NAMESPACE:-default}
TASK_QUEUE=${GLEANER_TASK_QUEUE:-gleaner}
POOL=${GLEANER_POOL:-default}
DATA=${GLEANER_DATA:-$STACK_DIR/data}
SLOTS=${GLEANER_STACK_AGENT_SLOTS:-4}
AGENT_GRACE=${GLEANER_STACK_AGENT_GRACE:-135}
WORKER_GRACE=45 # compose's stop_grace_period
PG_DATA=$STACK_DIR/postgres
LOGS=$STACK_DIR/logs
RUN=$STACK_DIR/run

# Where clients reach the frontend: the bind address, or loopback for 0.0.0.0.
ADDR_HOST=$BIND_IP
if [ "$BIND_IP" = 0.0.0.0 ]; then
	ADDR_HOST=127.0.0.1
fi
ADDRESS=$ADDR_HOST:$FRONTEND_PORT

export STACK_LOG_LEVEL=${GLEANER_STACK_LOG_LEVEL:-info}
export STACK_PG_HOST=$PG_HOST STACK_PG_PORT=$PG_PORT STACK_PG_PASSWORD=$PG_PASSWORD
export STACK_BIND_IP=$BIND_IP STACK_BROADCAST_IP=$ADDR_HOST
export STACK_FRONTEND_PORT=$FRONTEND_PORT
export STACK_FRONTEND_HTTP_PORT=${GLEANER_STACK_FRONTEND_HTTP_PORT:-7243}
export STACK_HISTORY_PORT=${GLEANER_STACK_HISTORY_PORT:-7234}
export STACK_MATCHING_PORT=${GLEANER_STACK_MATCHING_PORT:-7235}
export STACK_WORKER_PORT=${GLEANER_STACK_WORKER_PORT:-7239}
IFS=, read -r STACK_FRONTEND_MEMBERSHIP_PORT STACK_HISTORY_MEMBERSHIP_PORT STACK_MATCHING_MEMBERSHIP_PORT STACK_WORKER_MEMBERSHIP_PORT \
	<<<"${GLEANER_STACK_MEMBERSHIP_PORTS:-6933,6934,6935,6939}"
export STACK_FRONTEND_MEMBERSHIP_PORT STACK_HISTORY_MEMBERSHIP_PORT STACK_MATCHING_MEMBERSHIP_PORT STACK_WORKER_MEMBERSHIP_PORT
for p in "$STACK_FRONTEND_MEMBERSHIP_PORT" "$STACK_HISTORY_MEMBERSHIP_PORT" "$STACK_MATCHING_MEMBERSHIP_PORT" "$STACK_WORKER_MEMBERSHIP_PORT"; do
	[[ $p =~ ^[0-9]+$ ]] && [ "$p" -lt 32768 ] ||
		{ echo "stack: GLEANER_STACK_MEMBERSHIP_PORTS: $p: want four ports below 32768" >&2 && exit 1; }
done
export STACK_DYNAMIC_CONFIG=$repo/deploy/dynamicconfig/gleaner.yaml
export STACK_UI_PORT=${GLEANER_STACK_UI_PORT:-8080} STACK_UI_TEMPORAL_ADDRESS=$ADDRESS STACK_NAMESPACE=$NAMESPACE

temporal_cli() {
	if [ -n "${TEMPORAL_CLI:-}" ] && [ -x "$TEMPORAL_CLI" ]; then
		echo "$TEMPORAL_CLI"
	elif command -v temporal >/dev/null 2>&1; then
		command -v temporal
	elif [ -x "$(go env GOPATH 2>/dev/null)/bin/temporal" ]; then
		echo "$(go env GOPATH)/bin/temporal"
	else
		die "the temporal CLI is missing (make temporal installs it; or set TEMPORAL_CLI)"
	fi
}

# --- processes ---------------------------------------------------------------

pidfile() { echo "$RUN/$1.pid"; }

# running NAME: the pid file names a live process.
running() {
	local f pid
	f=$(pidfile "$1")
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

pid_of() { cat "$(pidfile "$1")" 2>/dev/null || true; }

# launch NAME DIR CMD...: runs CMD in DIR in a session of its own, output
# appended to logs/NAME.log after a header line, pid in run/NAME.pid.
launch() {
	local name=$1 dir=$2
	shift 2
	local log=$LOGS/$name.log
	echo "=== $(date -u +%FT%TZ) start: $*" >>"$log"
	(cd "$dir" && exec setsid "$@" >>"$log" 2>&1 </dev/null) &
	echo $! >"$(pidfile "$name")"
}

# log_since NAME OFFSET: the log of NAME from byte OFFSET on.
log_since() { tail -c +"$(($2 + 1))" "$LOGS/$1.log" 2>/dev/null || true; }
log_size() { stat -c %s "$LOGS/$1.log" 2>/dev/null || echo 0; }

# wait_for NAME SECONDS CHECK...: polls CHECK every 0.5 s until it succeeds;
# fails early when NAME's process exited, or after SECONDS.
wait_for() {
	local name=$1 secs=$2
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@"; do
		if [ "$name" != - ] && ! running "$name"; then
			tail -n 30 "$LOGS/$name.log" | cut -c1-400 >&2 || true
			die "$name exited while starting (log: $LOGS/$name.log)"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			[ "$name" = - ] || tail -n 30 "$LOGS/$name.log" | cut -c1-400 >&2 || true
			die "$name: not ready after ${secs}s"
		fi
		sleep 0.5
	done
}

# terminate NAME SIGNAL GRACE: signal the process, wait up to GRACE seconds
# for it to exit, then SIGKILL it.
terminate() {
	local name=$1 sig=$2 grace=$3 pid
	if ! running "$name"; then
		rm -f "$(pidfile "$name")"
		return 0
	fi
	pid=$(pid_of "$name")
	kill -s "$sig" "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + grace))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			say "$name (pid $pid) still running ${grace}s after SIG$sig: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		sleep 0.2
	done
	rm -f "$(pidfile "$name")"
}

# --- PostgreSQL --------------------------------------------------------------

# as_pg CMD...: CMD as the user PostgreSQL runs as (it refuses root).
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u "$PG_OS_USER" -- "$@"
	else
		"$@"
	fi
}

pg_ready() { "$PG_BIN/pg_isready" -q -h "$PG_HOST" -p "$PG_PORT" -U temporal -d postgres; }
pg_running() { [ -f "$PG_DATA/PG_VERSION" ] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; }
pg_opts() { echo "-p $PG_PORT -h $PG_HOST -k ''"; }

ensure_postgres_installed() {
	[ -x "$PG_BIN/pg_ctl" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing Debian's postgresql (apt-get)"
		apt-get update -q
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
	fi
	[ -x "$PG_BIN/pg_ctl" ] || die "PostgreSQL is missing at $PG_BIN (apt-get install postgresql, or set GLEANER_STACK_PG_BIN)"
}

start_postgres() {
	ensure_postgres_installed
	if [ "$(id -u)" = 0 ]; then
		id -u "$PG_OS_USER" >/dev/null 2>&1 ||
			useradd --system --home-dir /var/lib/postgresql --shell /usr/sbin/nologin "$PG_OS_USER"
	fi
	mkdir -p "$PG_DATA" "$LOGS"
	touch "$LOGS/postgres.log"
	if [ "$(id -u)" = 0 ]; then
		chown "$PG_OS_USER:" "$PG_DATA" "$LOGS/postgres.log"
		as_pg test -w "$PG_DATA" ||
			die "$PG_OS_USER cannot write $PG_DATA: every directory above it must be searchable by others (chmod o+x)"
	fi
	chmod 700 "$PG_DATA"
	if [ ! -f "$PG_DATA/PG_VERSION" ]; then
		say "initdb $PG_DATA (user temporal)"
		local pw=$RUN/pgpass.tmp # initdb wants an empty directory
		mkdir -p "$RUN"
		(umask 077 && printf '%s\n' "$PG_PASSWORD" >"$pw")
		[ "$(id -u)" = 0 ] && chown "$PG_OS_USER:" "$pw"
		as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U temporal --pwfile="$pw" --auth=scram-sha-256 \
			-E UTF8 --locale=C >>"$LOGS/postgres.log" 2>&1 || {
			rm -f "$pw"
			tail -n 20 "$LOGS/postgres.log" >&2
			die "initdb failed"
		}
		rm -f "$pw"
	fi
	if pg_running; then
		say "postgres: running"
	else
		say "postgres: starting on $PG_HOST:$PG_PORT"
		as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$LOGS/postgres.log" -o "$(pg_opts)" -w -t 120 start >/dev/null ||
			{
				tail -n 20 "$LOGS/postgres.log" >&2
				die "PostgreSQL did not start"
			}
	fi
	# compose's healthcheck: pg_isready -U temporal -d postgres.
	wait_for - 120 pg_ready
}

stop_postgres() {
	if pg_running; then
		say "postgres: stopping"
		as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m "${1:-fast}" -w -t 120 stop >/dev/null
	fi
}

restart_postgres() {
	if ! pg_running; then
		start_postgres
		return
	fi
	local mode=${GLEANER_STACK_PG_MODE:-fast}
	say "postgres: restarting (-m $mode)"
	as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$LOGS/postgres.log" -o "$(pg_opts)" -m "$mode" -w -t 120 restart >/dev/null
	wait_for - 120 pg_ready
}

# --- Temporal ----------------------------------------------------------------

build_temporal() {
	if [ -x "$BIN_DIR/temporal-server" ] && [ -x "$BIN_DIR/temporal-sql-tool" ] && [ -d "$BIN_DIR/schema/postgresql/v12" ]; then
		return 0
	fi
	say "building Temporal server $TEMPORAL_VERSION and temporal-sql-tool into $BIN_DIR (go install, minutes once)"
	mkdir -p "$BIN_DIR"
	GOBIN=$BIN_DIR GOFLAGS="${GOFLAGS:-}" go install \
		"go.temporal.io/server/cmd/server@v$TEMPORAL_VERSION" \
		"go.temporal.io/server/cmd/tools/sql@v$TEMPORAL_VERSION"
	mv -f "$BIN_DIR/server" "$BIN_DIR/temporal-server"
	mv -f "$BIN_DIR/sql" "$BIN_DIR/temporal-sql-tool"
	# The schemas of that version, where setup-schema.sh looks for them
	# (TEMPORAL_HOME/schema/postgresql/v12, as in admin-tools).
	local mod
	mod=$(go env GOMODCACHE)/go.temporal.io/server@v$TEMPORAL_VERSION
	[ -d "$mod/schema/postgresql/v12" ] || die "no schema in $mod"
	rm -rf "$BIN_DIR/schema"
	mkdir -p "$BIN_DIR/schema/postgresql"
	cp -R "$mod/schema/postgresql/v12" "$BIN_DIR/schema/postgresql/"
	chmod -R u+w "$BIN_DIR/schema"
}

run_schema() {
	build_temporal
	say "schema: temporal and temporal_visibility (deploy/setup-schema.sh)"
	echo "=== $(date -u +%FT%TZ) setup-schema" >>"$LOGS/schema.log"
	if ! PATH=$BIN_DIR:$PG_BIN:$PATH TEMPORAL_HOME=$BIN_DIR \
		POSTGRES_SEEDS=$PG_HOST DB_PORT=$PG_PORT POSTGRES_USER=temporal SQL_PASSWORD=$PG_PASSWORD \
		DB=postgres12 DBNAME=temporal VISIBILITY_DBNAME=temporal_visibility \
		sh "$repo/deploy/setup-schema.sh" >>"$LOGS/schema.log" 2>&1; then
		tail -n 20 "$LOGS/schema.log" >&2
		die "setup-schema failed (log: $LOGS/schema.log)"
	fi
}

temporal_healthy() { "$(temporal_cli)" operator cluster health --address "$ADDRESS" >/dev/null 2>&1; }

start_temporal() {
	build_temporal
	if running temporal; then
		say "temporal: running (pid $(pid_of temporal))"
		return
	fi
	say "temporal: starting Temporal server $TEMPORAL_VERSION, frontend $ADDRESS"
	launch temporal "$STACK_DIR" "$BIN_DIR/temporal-server" --root "$repo/deploy/stack" --config . \
		--env temporal --allow-no-auth start
	# compose's healthcheck is the frontend's port; this asks the frontend.
	wait_for temporal 180 temporal_healthy
}

run_setup() {
	say "setup: namespace $NAMESPACE and search attributes (deploy/setup-temporal.sh)"
	echo "=== $(date -u +%FT%TZ) setup-temporal" >>"$LOGS/setup.log"
	local cli
	cli=$(temporal_cli)
	if ! PATH=$(dirname "$cli"):$PATH TEMPORAL_ADDRESS=$ADDRESS TEMPORAL_NAMESPACE=$NAMESPACE \
		GLEANER_NAMESPACE_RETENTION=${GLEANER_NAMESPACE_RETENTION:-72h} \
		sh "$repo/deploy/setup-temporal.sh" "${SEARCH_ATTRIBUTES[@]}" >>"$LOGS/setup.log" 2>&1; then
		tail -n 20 "$LOGS/setup.log" >&2
		die "setup-temporal failed (log: $LOGS/setup.log)"
	fi
}

# --- the web UI --------------------------------------------------------------

build_ui() {
	[ "$UI" != 0 ] || return 0
	[ -x "$UI_DIR/temporal-ui-server" ] && return 0
	say "building the Temporal UI server $UI_VERSION into $UI_DIR (go install, a minute once)"
	mkdir -p "$UI_DIR"
	GOBIN=$UI_DIR go install "github.com/temporalio/ui-server/v2/cmd/server@v$UI_VERSION"
	mv -f "$UI_DIR/server" "$UI_DIR/temporal-ui-server"
}

ui_serving() { curl -fsS -o /dev/null "http://$ADDR_HOST:$STACK_UI_PORT/"; }

start_ui() {
	if [ "$UI" = 0 ]; then
		return
	fi
	build_ui
	if running ui; then
		say "ui: running (pid $(pid_of ui))"
		return
	fi
	say "ui: starting the Temporal UI $UI_VERSION on http://$ADDR_HOST:$STACK_UI_PORT"
	launch ui "$STACK_DIR" "$UI_DIR/temporal-ui-server" --root "$repo/deploy/stack" --config ui --env stack start
	wait_for ui 60 ui_serving
}

# --- Gleaner -----------------------------------------------------------------

ensure_gleaner() {
	if [ ! -x "$GLEANER" ]; then
		say "building $GLEANER"
		(cd "$repo" && go build -o "$GLEANER" ./cmd/gleaner)
	fi
}

gleaner_env() {
	local env=(TEMPORAL_NAMESPACE="$NAMESPACE" GLEANER_TASK_QUEUE="$TASK_QUEUE")
	if [ "$1" = agent ]; then
		env+=(GLEANER_POOL="$POOL")
		[ -z "${GLEANER_NODE_PREFIX:-}" ] || env+=(GLEANER_NODE_PREFIX="$GLEANER_NODE_PREFIX")
		[ -z "${GLEANER_ADVERTISE_ADDR:-}" ] || env+=(GLEANER_ADVERTISE_ADDR="$GLEANER_ADVERTISE_ADDR")
	fi
	printf '%s\n' "${env[@]}"
}

start_gleaner() {
	local name=$1 ready args env
	ensure_gleaner
	if running "$name"; then
		say "$name: running (pid $(pid_of "$name"))"
		return
	fi
	mkdir -p "$DATA"
	if [ "$name" = worker ]; then
		# shellcheck disable=SC2206 # flags split on blanks, as the user wrote them
		args=(worker --address "$ADDRESS" --nodes none --data-dir "$DATA" ${GLEANER_STACK_WORKER_FLAGS:-})
		ready="polling task queue"
	else
		# shellcheck disable=SC2206
		args=(agent --address "$ADDRESS" --slots "$SLOTS" --gpus none --data-dir "$DATA" ${GLEANER_STACK_AGENT_FLAGS:-})
		ready=": joined pool "
	fi
	mapfile -t env < <(gleaner_env "$name")
	say "$name: starting gleaner ${args[*]}"
	local from
	from=$(log_size "$name")
	# In the checkout, as compose's /opt/gleaner: the examples' command
	# bin/go-mlp is there.
	launch "$name" "$repo" env "${env[@]}" "$GLEANER" "${args[@]}"
	wait_for "$name" 120 grep_log "$name" "$from" "$ready"
}

grep_log() { log_since "$1" "$2" | grep -qF -- "$3"; }

# --- commands ----------------------------------------------------------------

all=(postgres temporal ui worker agent)

components() {
	local c
	for c in "$@"; do
		case $c in
		postgres | temporal | ui | worker | agent) ;;
		*) die "unknown component $c (postgres, temporal, ui, worker, agent)" ;;
		esac
	done
}

start_one() {
	case $1 in
	postgres) start_postgres ;;
	temporal) start_temporal ;;
	ui) start_ui ;;
	worker | agent) start_gleaner "$1" ;;
	esac
}

stop_one() {
	case $1 in
	postgres) stop_postgres fast ;;
	temporal) say "temporal: stopping" && terminate temporal TERM 30 ;;
	ui) running ui && say "ui: stopping"; terminate ui TERM 10 ;;
	worker) say "worker: stopping" && terminate worker TERM "$WORKER_GRACE" ;;
	agent) say "agent: stopping (its trainers checkpoint)" && terminate agent TERM "$AGENT_GRACE" ;;
	esac
}

kill_one() {
	case $1 in
	postgres) stop_postgres immediate ;;
	*)
		if running "$1"; then
			kill -KILL "$(pid_of "$1")" 2>/dev/null || true
			while running "$1"; do sleep 0.05; done
		fi
		rm -f "$(pidfile "$1")"
		;;
	esac
}

cmd_start() {
	mkdir -p "$STACK_DIR" "$LOGS" "$RUN"
	if [ $# -gt 0 ]; then
		components "$@"
		local c
		for c in "$@"; do start_one "$c"; done
		return
	fi
	build_temporal
	build_ui
	ensure_gleaner
	start_postgres
	run_schema
	start_temporal
	run_setup
	start_ui
	start_gleaner worker
	start_gleaner agent
	say "up: Temporal frontend $ADDRESS, namespace $NAMESPACE; logs in $LOGS"
	[ "$UI" = 0 ] || say "the Temporal UI: http://$ADDR_HOST:$STACK_UI_PORT"
	say "eval \"\$($0 env)\"  # then: gleaner submit -f examples/go-mlp/campaign.yaml --wait"
}

cmd_stop() {
	local list=("$@") c i
	[ ${#list[@]} -gt 0 ] || list=("${all[@]}")
	components "${list[@]}"
	for ((i = ${#all[@]} - 1; i >= 0; i--)); do
		for c in "${list[@]}"; do
			[ "$c" = "${all[$i]}" ] && stop_one "$c"
		done
	done
	return 0
}

cmd_status() {
	local c state rc=0
	for c in "${all[@]}"; do
		case $c in
		postgres)
			if pg_running; then state="running on $PG_HOST:$PG_PORT, data $PG_DATA"; else state=stopped; rc=3; fi
			;;
		temporal)
			if running temporal; then
				state="running (pid $(pid_of temporal)), frontend $ADDRESS"
				temporal_healthy || state="$state, not serving"
			else
				state=stopped
				rc=3
			fi
			;;
		ui)
			if [ "$UI" = 0 ]; then
				state="off (GLEANER_STACK_UI=0)"
			elif running ui; then
				state="running (pid $(pid_of ui)), http://$ADDR_HOST:$STACK_UI_PORT"
			else
				state=stopped
				rc=3
			fi
			;;
		*)
			if running "$c"; then state="running (pid $(pid_of "$c"))"; else state=stopped; rc=3; fi
			;;
		esac
		printf '%-9s %s\n' "$c" "$state"
	done
	echo "logs      $LOGS"
	echo "data      $DATA"
	return $rc
}

cmd_env() {
	printf 'export TEMPORAL_ADDRESS=%q\n' "$ADDRESS"
	printf 'export TEMPORAL_NAMESPACE=%q\n' "$NAMESPACE"
	printf 'export GLEANER_TASK_QUEUE=%q\n' "$TASK_QUEUE"
	printf 'export GLEANER_STACK_DIR=%q\n' "$STACK_DIR"
	printf 'export GLEANER_DATA=%q\n' "$DATA"
	[ "$UI" = 0 ] || printf 'export GLEANER_UI=%q\n' "http://$ADDR_HOST:$STACK_UI_PORT"
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
restart)
	[ $# -gt 0 ] || die "restart: which component?"
	components "$@"
	mkdir -p "$LOGS" "$RUN"
	for c in "$@"; do
		if [ "$c" = postgres ]; then restart_postgres; else
			stop_one "$c"
			start_one "$c"
		fi
	done
	;;
kill)
	[ $# -gt 0 ] || die "kill: which component?"
	components "$@"
	for c in "$@"; do kill_one "$c"; done
	;;
status) cmd_status ;;
env) cmd_env ;;
build)
	build_temporal
	build_ui
	ensure_gleaner
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
