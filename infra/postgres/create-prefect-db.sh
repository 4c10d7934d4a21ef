#!/bin/sh
# Creates Prefect's database next to MLflow's. The postgres image runs this once, when
# its data volume is first initialised (/docker-entrypoint-initdb.d); POSTGRES_DB (MLflow's
# database) exists by then.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    --set=prefect_db="$PREFECT_DB" <<'SQL'
CREATE DATABASE :"prefect_db";
SQL
