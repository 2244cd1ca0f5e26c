#!/usr/bin/env bash
# The failover story on a real Patroni cluster, on loopback only: one etcd,
# two Patroni nodes (PostgreSQL 15), lockctl pointed at both with a
# multi-host DSN. It takes locks, holds one with `lockctl run` through a
# switchover and then a failover (the leader's Patroni and PostgreSQL killed),
# and checks that every token after a change of primary is above every token
# before it. With tmux installed, the console watches too and its header is
# printed after each step.
#
# Not part of CI. Needs: apt-get install patroni etcd-server etcd-client
# (Debian: patroni 3.0.2, etcd 3.4) and PostgreSQL 15. Run from the
# repository root, as root or as a user that can run PostgreSQL:
#
#   bash internal/patroni/run.sh
#
# Everything lives in a temporary directory, removed at the end with every
# process the script started. Ports: etcd 23790/23800, PostgreSQL 55441/55442,
# Patroni REST 58008/58009 (all 127.0.0.1).
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
for tool in etcd patroni patronictl "$PGBIN/postgres"; do
	command -v "$tool" >/dev/null || { echo "run.sh: $tool not found (apt-get install patroni etcd-server etcd-client postgresql-15)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/lockctl-patroni-XXXXXX)
chmod 755 "$work"
pids=()
# pids_of lists the processes started here: their command lines name the
# temporary directory. (runuser, as root, does not pass SIGKILL on.)
pids_of() { pgrep -f -- "$work/$1" || true; }
cleanup() {
	for pid in "${pids[@]}" $(pids_of node) $(pids_of etcd); do kill "$pid" 2>/dev/null || true; done
	sleep 1
	# Patroni stops its PostgreSQL when it exits; a killed one leaves it.
	for d in "$work"/node*/data; do
		[ -f "$d/postmaster.pid" ] && kill -9 "$(head -1 "$d/postmaster.pid")" 2>/dev/null || true
	done
	if [ -n "${tmux_sock:-}" ]; then tmux -S "$tmux_sock" kill-server 2>/dev/null || true; fi
	wait 2>/dev/null || true
	if [ -z "${KEEP:-}" ]; then rm -rf "$work"; else echo "kept $work"; fi
}
trap cleanup EXIT

# As root, the servers run as postgres (initdb refuses root).
as_pg=()
if [ "$(id -u)" = 0 ]; then
	chown postgres "$work"
	as_pg=(runuser -u postgres --)
fi

"${as_pg[@]}" etcd --name lockctl --data-dir "$work/etcd" \
	--listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
	--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
	--initial-cluster lockctl=http://127.0.0.1:23800 >"$work/etcd.log" 2>&1 &
pids+=($!)

node_config() { # name pgport restport
	cat <<EOF
scope: lockctl
name: $1
restapi:
  listen: 127.0.0.1:$3
  connect_address: 127.0.0.1:$3
etcd3:
  hosts: 127.0.0.1:23790
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1073741824
    postgresql:
      use_pg_rewind: false
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 5
        max_replication_slots: 5
  initdb: [{encoding: UTF8}, {auth: trust}]
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$2
  connect_address: 127.0.0.1:$2
  data_dir: $work/$1/data
  bin_dir: $PGBIN
  pgpass: $work/$1/pgpass
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
  parameters:
    unix_socket_directories: $work/$1
tags: {nofailover: false, noloadbalance: false, clonefrom: false}
EOF
}
start_node() { # name pgport restport
	mkdir -p "$work/$1"
	node_config "$@" >"$work/$1.yml"
	[ ${#as_pg[@]} -gt 0 ] && chown -R postgres "$work/$1" "$work/$1.yml"
	"${as_pg[@]}" patroni "$work/$1.yml" >"$work/$1.log" 2>&1 &
	pids+=($!)
}
start_node node1 55441 58008
sleep 2
start_node node2 55442 58009

ctl() { patronictl -c "$work/node1.yml" "$@"; }
# leader prints the leader's name; replicas how many replicas run (Patroni
# 3.0.2 says "running", later ones "streaming").
leader() {
	ctl list -f json 2>/dev/null | python3 -c 'import json, sys
print(next((m["Member"] for m in json.load(sys.stdin) if m["Role"] == "Leader" and m["State"] == "running"), ""))'
}
replicas() {
	ctl list -f json 2>/dev/null | python3 -c 'import json, sys
print(sum(m["Role"] in ("Replica", "Sync Standby") and m["State"] in ("running", "streaming") for m in json.load(sys.stdin)))'
}
test_cluster() { [ -n "$(leader)" ] && [ "$(replicas)" = 1 ]; }
is_leader() { [ "$(leader)" = "$1" ]; }
wait_for() { # seconds description command...
	local n=$1 what=$2; shift 2
	for _ in $(seq "$((n * 5))"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
	echo "run.sh: no $what within ${n}s; logs in $work:" >&2
	tail -n 20 "$work"/node*.log "$work"/etcd.log >&2
	exit 1
}
# A cluster with a leader and a streaming replica.
wait_for 90 "leader and streaming replica" test_cluster
ctl list

echo "== building lockctl"
go build -o "$work/lockctl" .
dsn="host=127.0.0.1,127.0.0.1 port=55441,55442 user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=3"
lockctl() { "$work/lockctl" "$@" --dsn "$dsn"; }
lockctl migrate

tmux_sock=""
if command -v tmux >/dev/null; then
	tmux_sock="$work/tmux.sock"
	tmux -S "$tmux_sock" new-session -d -x 160 -y 30 "'$work/lockctl' --dsn '$dsn' --refresh 500ms"
fi
header() {
	[ -n "$tmux_sock" ] || return 0
	sleep 2
	echo "   console: $(tmux -S "$tmux_sock" capture-pane -p | head -1)"
}

max=0
take() { # key owner: acquire and release, check the token rises
	local out token
	out=$(lockctl acquire "$1" --owner "$2" --ttl 30s --json --wait 20s)
	token=$(echo "$out" | sed -n 's/.*"token":\([0-9]*\).*/\1/p')
	if [ -z "$token" ] || [ "$token" -le "$max" ]; then
		echo "run.sh: token $token of $1 is not above $max" >&2
		exit 1
	fi
	max=$token
	lockctl release "$1" --owner "$2" --token "$token" >/dev/null
	echo "   $1: token $token (epoch $((token >> 40)))"
}

# A holder that keeps one lock across both changes of primary.
"$work/lockctl" run held --owner runner --ttl 30s --dsn "$dsn" -- sleep 600 >"$work/run.log" 2>&1 &
pids+=($!)

echo "== before: leader $(leader)"
for i in 1 2 3; do take "job-$i" before; done
header

echo "== switchover to node2"
ctl switchover --leader node1 --candidate node2 --force
wait_for 60 "node2 as leader" is_leader node2
for i in 1 2 3; do take "job-$i" after-switchover; done
header

# node1 rejoins as node2's replica; only a running replica can take over.
wait_for 90 "node1 back as a replica" test_cluster
echo "== failover: node2's Patroni and PostgreSQL killed"
for pid in $(pids_of node2.yml); do kill -9 "$pid"; done
kill -9 "$(head -1 "$work/node2/data/postmaster.pid")"
wait_for 90 "node1 as leader" is_leader node1
for i in 1 2 3; do take "job-$i" after-failover; done
header
ctl list

echo "== the lock lockctl run held through both:"
lockctl ls --prefix held
echo "== lockctl run says: $(tr '\n' ' ' <"$work/run.log")"
echo "run.sh: every token rose across a switchover and a failover (last $max)"
