#!/usr/bin/env bash
# Throughput floor of "exclusive cycle ≥ 0.93 × floor-function": one server,
# schema main (the locker as built) and schema cf (the same with
# ladder/contract-floor.sql: the least grant that keeps the contract), each
# with floor-functions.sql. pgbench -M prepared, alternated rounds, 6 s each
# (T=seconds to change it). Run as root: the server it starts runs as the
# user postgres, and goes away at the end (BENCHMARKS.md, "One lease table").
# usage: floor-throughput.sh /path/to/lockctl
set -uo pipefail
BIN=$1; PGBIN=/usr/lib/postgresql/15/bin; PB=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/ft.XXXX); chmod 755 $D; chown postgres $D
PORT=${PORT:-5597}
su postgres -c "$PGBIN/initdb -D $D/data -A trust -U postgres >/dev/null"
su postgres -c "$PGBIN/postgres -D $D/data -p $PORT -k $D -c listen_addresses= -c synchronous_commit=off -c max_connections=100 -c shared_buffers=256MB >$D/log 2>&1" </dev/null >/dev/null 2>&1 &
for i in $(seq 1 60); do $PGBIN/pg_isready -h $D -p $PORT -q && break; sleep 1; done
psql -q -h $D -p $PORT -U postgres -c 'CREATE DATABASE bench' postgres
for s in main cf; do
  psql -q -h $D -p $PORT -U postgres -c "CREATE SCHEMA $s" bench
  "$BIN" migrate --dsn "host=$D port=$PORT user=postgres dbname=bench options=-csearch_path=$s" >/dev/null
  for f in floor-functions.sql upsert-table.sql; do PGOPTIONS="-csearch_path=$s" psql -q -h $D -p $PORT -U postgres -f $PB/$f bench >/dev/null; done
  for sc in locker-cycle floor-cycle; do PGOPTIONS="-csearch_path=$s" pgbench -n -M prepared -c 32 -t 300 -f $PB/$sc.sql -h $D -p $PORT -U postgres bench >/dev/null 2>&1; done
  PGOPTIONS="-csearch_path=$s" psql -q -h $D -p $PORT -U postgres -c ANALYZE bench
  if [ $s = cf ]; then PGOPTIONS="-csearch_path=$s" psql -q -v ON_ERROR_STOP=1 -h $D -p $PORT -U postgres -f $PB/ladder/contract-floor.sql bench >/dev/null || echo "contract-floor failed"; fi
done
tps() { PGOPTIONS="-csearch_path=$1" pgbench -n -M prepared -c $3 -j 2 -T ${T:-6} -f $PB/$2.sql -h $D -p $PORT -U postgres bench 2>/dev/null | awk '/^tps/{print int($3); exit}'; }
for c in 8 32; do for r in 1 2 3; do
  a=$(tps main locker-cycle $c); f=$(tps main floor-cycle $c); b=$(tps cf locker-cycle $c)
  echo "clients $c round $r: locker $a floor-function $f contract-floor $b | locker/floor $(echo "scale=3;$a/$f"|bc) contract-floor/floor $(echo "scale=3;$b/$f"|bc) load $(cut -d' ' -f1 /proc/loadavg)"
done; done
su postgres -c "$PGBIN/pg_ctl -D $D/data stop -m immediate" >/dev/null 2>&1 || true
rm -rf $D
