#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases: the default
# (persistence) store and the visibility store. docker-compose.yml runs it
# once per `up`, in the official temporalio/admin-tools image, which ships
# temporal-sql-tool and the versioned schemas under /etc/temporal/schema.
# deploy/stack/stack.sh runs it too, with the temporal-sql-tool and the
# schemas of the server it builds (TEMPORAL_HOME). It is idempotent: on a
# database set up before, it only applies the versions the image has and
# the database lacks (a server upgrade).
#
# Environment: POSTGRES_SEEDS (host), DB_PORT, POSTGRES_USER, SQL_PASSWORD,
# DB (SQL plugin, postgres12), DBNAME, VISIBILITY_DBNAME.
set -eu

host=${POSTGRES_SEEDS:-postgresql}
port=${DB_PORT:-5432}
user=${POSTGRES_USER:-temporal}
plugin=${DB:-postgres12}
schemas=${TEMPORAL_HOME:-/etc/temporal}/schema/postgresql/v12
: "${SQL_PASSWORD:?SQL_PASSWORD must be set (the PostgreSQL password)}"
export SQL_PASSWORD

sqltool() {
	temporal-sql-tool --plugin "$plugin" --ep "$host" -p "$port" -u "$user" "$@"
}

# setup DATABASE SCHEMA_DIR
setup() {
	db=$1
	dir=$2
	echo "setup-schema: database $db ($dir)"
	if ! out=$(sqltool --db "$db" create 2>&1); then
		case $out in
		*"already exists"*) echo "setup-schema: database $db exists" ;;
		*)
			echo "$out" >&2
			exit 1
			;;
		esac
	fi
	# A database whose schema is versioned already only needs the updates;
	# a new one gets the version table first (setup-schema -v 0.0), then
	# every version.
	if sqltool --db "$db" update-schema -d "$dir" 2>/dev/null; then
		echo "setup-schema: $db is up to date"
		return
	fi
	sqltool --db "$db" setup-schema -v 0.0
	sqltool --db "$db" update-schema -d "$dir"
	echo "setup-schema: $db set up"
}

# PostgreSQL's own pg_isready where there is one (deploy/stack/stack.sh
# runs this script on a host without nc), else the port (admin-tools).
reachable() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h "$host" -p "$port" -U "$user" -d postgres
	else
		nc -z -w 5 "$host" "$port"
	fi
}

echo "setup-schema: waiting for PostgreSQL at $host:$port"
i=0
until reachable; do
	i=$((i + 1))
	if [ "$i" -ge 60 ]; then
		echo "setup-schema: PostgreSQL at $host:$port did not answer" >&2
		exit 1
	fi
	sleep 2
done

setup "${DBNAME:-temporal}" "$schemas/temporal/versioned"
setup "${VISIBILITY_DBNAME:-temporal_visibility}" "$schemas/visibility/versioned"
echo "setup-schema: done"
