#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas to
# the version the server needs, with temporal-sql-tool. Safe to run again:
# an existing database is kept and update-schema only applies what is
# missing. docker-compose.yml runs it in temporalio/admin-tools (schema job);
# deploy/bare/run.sh runs it with the tool built from the module cache.
#
# Environment: SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD (read
# by temporal-sql-tool itself), TEMPORAL_DB, VISIBILITY_DB, and SCHEMA_DIR,
# the directory holding temporal/ and visibility/ (postgresql/v12 in the
# server's schema tree).
set -eu

: "${SQL_HOST:?}" "${SQL_USER:?}" "${SQL_PASSWORD:?}" "${SCHEMA_DIR:?}"
tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"

setup() { # database, schema subdirectory
  if "$tool" --db "$1" create-database 2>/dev/null; then
    echo "setup-schema: database $1 is there"
  else
    echo "setup-schema: database $1 not created (it exists, or the next step fails saying why)"
  fi
  # Version 0.0 is the schema_version table alone; update-schema then
  # applies every versioned step above what the database already has.
  "$tool" --db "$1" setup-schema -v 0.0
  "$tool" --db "$1" update-schema -d "$SCHEMA_DIR/$2/versioned"
}

setup "${TEMPORAL_DB:-temporal}" temporal
setup "${VISIBILITY_DB:-temporal_visibility}" visibility
echo "setup-schema: done"
