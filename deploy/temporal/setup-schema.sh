#!/bin/sh
# docker-compose.yml's temporal-schema job: makes Temporal's two databases on the PostgreSQL service and
# sets up or updates their schemas to those the tool embeds (a no-op when they are current). Its
# connection is the tool's own environment (SQL_HOST, SQL_USER, SQL_PASSWORD, ...): no password on a
# command line. Tried again while PostgreSQL is not taking connections yet, about two minutes at most.
set -u
prepare() {
  for db in temporal temporal_visibility; do
    schema=postgresql/v12/temporal
    [ "$db" = temporal_visibility ] && schema=postgresql/v12/visibility
    # Made once; "already exists" afterwards (postgres:16 makes one named as its user, too).
    if ! out="$(temporal-sql-tool --db "$db" create-database 2>&1)"; then
      case "$out" in
        *'already exists'*) ;;
        *) echo "$out" | tail -n 3 >&2; return 1 ;;
      esac
    fi
    # A database the tool has versioned is only updated; only one without its version table is
    # versioned first (setting up a versioned one would put its version back to 0.0).
    if ! out="$(temporal-sql-tool --db "$db" update-schema --schema-name "$schema" 2>&1)"; then
      case "$out" in
        *schema_version*'does not exist'*)
          temporal-sql-tool --db "$db" setup-schema -v 0.0 && temporal-sql-tool --db "$db" update-schema --schema-name "$schema" || return 1 ;;
        *) echo "$out" | tail -n 3 >&2; return 1 ;;
      esac
    fi
  done
}
tries=0
until prepare; do
  tries=$((tries + 1))
  if [ "$tries" -ge 60 ]; then
    echo "Temporal's databases on $SQL_HOST could not be prepared (see above)" >&2
    exit 1
  fi
  sleep 2
done
echo "Temporal's databases on $SQL_HOST are ready"
