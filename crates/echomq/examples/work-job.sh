#!/bin/sh
# A job for `emq work`, in shell: the payload on stdin, the job in ECHOMQ_*
# variables; exit 0 acks the job, any other exit fails it (retried with
# back-off, then dead), the tail of stderr kept as its error.
#
#   emq work emails -- sh crates/echomq/examples/work-job.sh
#
# The rule every command follows: read the whole payload and check it has
# ECHOMQ_PAYLOAD_BYTES bytes before acting on it. A worker killed while it
# was writing the payload leaves its command an empty or cut one; the command
# must then fail (the job runs again elsewhere), never act on what it got.
set -eu

payload=$(mktemp)
trap 'rm -f "$payload"' EXIT
cat > "$payload"
got=$(($(wc -c < "$payload")))
if [ "$got" -ne "${ECHOMQ_PAYLOAD_BYTES:?set by emq work}" ]; then
  echo "payload cut: $got of $ECHOMQ_PAYLOAD_BYTES bytes; not acting on it" >&2
  exit 1
fi

echo "$ECHOMQ_QUEUE $ECHOMQ_JOB_ID (attempt $ECHOMQ_JOB_ATTEMPT): $(cat "$payload")"
