#!/bin/sh
# with-lock.sh KEY TTL_SECONDS COMMAND [ARG...]
#
# Runs COMMAND while holding lockctl lock KEY, with psql and the protocol
# functions: one distributed_lock_acquire before, one distributed_lock_release
# after (also when COMMAND fails). COMMAND gets the fencing token in
# LOCK_TOKEN, to pass along with its writes. There is no keepalive: COMMAND
# must finish within TTL_SECONDS, or the lock can pass to another owner.
#
# Connects with psql's usual settings (PGHOST, PGPORT, PGDATABASE, PGUSER,
# PGOPTIONS='-c search_path=SCHEMA' for a lock schema other than the first
# one on the path). The role needs `lockctl grant ROLE --as service`.
# LOCK_OWNER names the holder (default: host name and this shell's pid).
#
# Exit status: COMMAND's; 75 (EX_TEMPFAIL) when another owner holds KEY, and
# COMMAND does not run; 70 when COMMAND succeeded but KEY was no longer held
# when it ended (it outlived TTL_SECONDS and lost the lock; writes that did
# not carry LOCK_TOKEN to a resource that checks it were unprotected); 64
# for bad arguments; psql's when the database refuses (a TTL of 0, no grant).
set -eu
[ $# -ge 3 ] || { echo "usage: with-lock.sh KEY TTL_SECONDS COMMAND [ARG...]" >&2; exit 64; }
key=$1 ttl=$2
shift 2
case $ttl in
    '' | . | *[!0-9.]* | *.*.*)
        echo "with-lock.sh: TTL_SECONDS must be a number of seconds, not '$ttl'" >&2
        exit 64 ;;
esac
owner=${LOCK_OWNER:-$(uname -n)-$$}
psql() { command psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=terse -v key="$key" -v owner="$owner" "$@"; }

# Only a new grant counts: "renewed" would mean this owner already held KEY.
token=$(psql -v ttl="$ttl" <<'SQL'
SELECT fence_token FROM distributed_lock_acquire(key => :'key'::text, owner => :'owner'::text,
    ttl_us => (:'ttl'::numeric * 1000000)::bigint, log_grants => true)
WHERE outcome IN ('acquired', 'stolen');
SQL
)
if [ -z "$token" ]; then
    echo "with-lock.sh: $key is held (or being taken) by another owner" >&2
    exit 75
fi

status=0
LOCK_TOKEN=$token "$@" || status=$?
outcome=$(psql -v token="$token" <<'SQL'
SELECT outcome FROM distributed_lock_release(key => :'key'::text, owner => :'owner'::text,
    token => :'token'::bigint, log_release => true);
SQL
) || outcome=error
if [ "$outcome" != released ]; then
    echo "with-lock.sh: $key (token $token) was not released: $outcome" >&2
    [ "$status" -ne 0 ] || status=70
fi
exit "$status"
