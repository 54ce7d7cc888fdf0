#!/bin/bash
# gcloud for `ccl-harness run --dry-run` on a TPU target: the rendered launch.sh runs against it,
# so the commands shown are the ones the script itself would run, in its order, and nothing
# reaches Google Cloud. Each call is appended to $CCL_DRY_RUN_LOG, quoted as a shell would need.
# It answers as far as the lifecycle needs to go on: the queued resource does not exist until the
# script creates it, and is ACTIVE from then on; ssh and scp succeed and do nothing.
set -u
log=${CCL_DRY_RUN_LOG:?set by ccl-harness run --dry-run}
line=gcloud
for arg in "$@"; do
    line+=" $(printf '%q' "$arg")"
done
printf '%s\n' "$line" >>"$log"
case "$*" in
*"queued-resources describe"*)
    if grep -q '^gcloud compute tpus queued-resources create ' "$log"; then
        case "$*" in *"--format=value(state.state)"*) echo ACTIVE ;; esac
        exit 0
    fi
    echo "ERROR: (gcloud.compute.tpus.queued-resources.describe) NOT_FOUND (dry run: not created yet)" >&2
    exit 1
    ;;
esac
exit 0
