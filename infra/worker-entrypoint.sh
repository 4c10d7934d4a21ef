#!/usr/bin/env bash
# Entrypoint of the mathembed worker images: points DVC at the deployment's object store,
# then runs the command (a Prefect worker, or the flow run a Kubernetes job starts).
#
#   DVC_S3_ENDPOINT_URL  endpoint of the `s3` remote, e.g. http://minio:9000
#                        (unset: keep .dvc/config's, http://127.0.0.1:9000)
#   DVC_DEFAULT_REMOTE   the remote `dvc push`/`dvc pull` use when none is named, e.g. s3
#                        (unset: .dvc/config's default, the local one)
#
# Both go to .dvc/config.local, the untracked per-machine config, so .dvc/config is unchanged.
set -euo pipefail

# The repository root: this script lives in its infra/ folder (/app/infra in the images).
cd "$(dirname "$(readlink -f "$0")")/.."

# The images carry no .git (.dockerignore); without this DVC refuses to run outside git.
if [[ ! -e .git ]]; then
    dvc config --local core.no_scm true
fi
if [[ -n "${DVC_S3_ENDPOINT_URL:-}" ]]; then
    dvc remote modify --local s3 endpointurl "${DVC_S3_ENDPOINT_URL}"
fi
if [[ -n "${DVC_DEFAULT_REMOTE:-}" ]]; then
    dvc remote default --local "${DVC_DEFAULT_REMOTE}"
fi

exec "$@"
