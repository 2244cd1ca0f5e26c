#!/usr/bin/env bash
# Regenerates the PNGs in this directory from a running `lockctl demo`: the
# real console in a 120×35 tmux pane, captured with its colours
# (capture-pane -e) and rendered by freeze.
#
#   screenshots/generate.sh          # from the repository root or anywhere
#
# Needs: Go, tmux, PostgreSQL's server binaries (as for `lockctl demo`), the
# Go module proxy (freeze is fetched as a Go tool) and pngquant (Debian
# `pngquant`).
#
# The PNGs are rendered at FONT_SIZE pixels (default 28: twice a 14 px
# terminal, sharp on high-density screens) and reduced to a 256-colour
# palette by pngquant, which leaves terminal text unchanged to the eye and
# keeps each file a few hundred KB. (Left to size itself, freeze renders at
# four times the pane's size and writes several MB per PNG.)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seed=${SEED:-7}
font_size=${FONT_SIZE:-28}
sock=lockctl-screenshots-$$
command -v pngquant >/dev/null || { echo "generate.sh: needs pngquant (apt-get install pngquant)" >&2; exit 1; }
work=$(mktemp -d)
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/lockctl" .)
# freeze runs from a scratch module so this one's go.mod stays untouched.
# freeze v0.2.2 pins wazero v1.8.0, whose compiled code crashes under Go 1.26
# (split stack overflow in memmove); wazero v1.11.0 renders the same images.
mkdir "$work/freeze" "$work/no-rsvg"
(
	cd "$work/freeze"
	go mod init screenshots 2>/dev/null
	go get -tool github.com/charmbracelet/freeze@v0.2.2 github.com/tetratelabs/wazero@v1.11.0 2>go-get.log ||
		{ cat go-get.log >&2; exit 1; }
	go build -o "$work/freeze-bin" github.com/charmbracelet/freeze
)

t() { tmux -L "$sock" "$@"; }
screen() { t capture-pane -p -t demo; }

# wait_for REGEX [SECONDS]: until the screen matches (extended regex).
wait_for() {
	local deadline=$((SECONDS + ${2:-60}))
	until screen | grep -Eq -- "$1"; do
		if ((SECONDS > deadline)); then
			echo "generate.sh: timed out waiting for /$1/; the screen:" >&2
			screen >&2
			exit 1
		fi
		sleep 0.3
	done
}

# wait_for_all SECONDS REGEX...: until every REGEX is on the screen at once.
wait_for_all() {
	local deadline=$((SECONDS + $1)) re missing
	shift
	while :; do
		missing=
		for re in "$@"; do
			screen | grep -Eq -- "$re" || missing=$re
		done
		[[ -z $missing ]] && return
		if ((SECONDS > deadline)); then
			echo "generate.sh: timed out waiting for /$missing/ beside /$*/; the screen:" >&2
			screen >&2
			exit 1
		fi
		sleep 0.3
	done
}

# refused: the header's count of refused fenced writes.
refused() { screen | sed -nE 's/.*fenced writes [0-9]+ ok, ([0-9]+) refused.*/\1/p'; }

keys() { t send-keys -t demo "$@"; sleep 0.6; }

# shot FILE [light]: the pane as it is now, with colours, as a PNG; light:
# in a white window, for a console run with --theme light. freeze v0.2.2
# ignores "default colour" (SGR 39 and 49), so the previous colour would
# bleed on; they are replaced by its window's own foreground and background.
shot() {
	local fg="197;200;198" bg="23;23;23" look=()
	if [[ ${2:-} == light ]]; then
		fg="36;41;47" bg="255;255;255" look=(--theme github --background "#FFFFFF")
	fi
	t capture-pane -e -p -t demo |
		sed -e "s/\x1b\[39m/\x1b[38;2;${fg}m/g" -e "s/\x1b\[49m/\x1b[48;2;${bg}m/g" \
			>"$work/$1.ansi"
	# An empty PATH: freeze prefers rsvg-convert where it is installed, which
	# draws with the system's fonts (proportional ones misalign the columns);
	# without it freeze renders itself, with its built-in JetBrains Mono.
	env PATH="$work/no-rsvg" "$work/freeze-bin" --language ansi --window "${look[@]}" --padding "$padding" \
		--font.size "$font_size" --width "$width" --height "$height" \
		--output "$work/$1" <"$work/$1.ansi" >/dev/null
	pngquant --quality 80-100 --speed 1 --strip --force --output "$here/$1" "$work/$1"
	echo "wrote screenshots/$1 ($(wc -c <"$here/$1") bytes)"
}

# The image's size for a 120×35 pane: freeze's cell is font size × 1/1.68
# wide and font size × 1.2 high; the window bar and padding come on top.
padding=$((font_size * 10 / 7))
width=$((121 * font_size * 100 / 168 + 2 * padding))
height=$((35 * font_size * 12 / 10 + 2 * padding + 15 + font_size * 6 / 10))

# More workers and keys than the defaults, so the table fills the pane.
t new-session -d -s demo -x 120 -y 35 "exec '$work/lockctl' demo --seed $seed --workers 14 --keys 8"

# 1. The lock table mid-story: a steal and a refused fenced write have
#    happened, workers are queued, the stuck report holds its hour.
wait_for 'fenced writes [0-9]+ ok, [1-9][0-9]* refused · steals [1-9]'
wait_for 'reports:stuck +report-gen'
keys g # the first row: the selection stays on the key that came first
sleep 2
shot console.png

# 2. Shared leases and a semaphore: reports:pool with its permits in use,
#    config:pricing read by several readers (or written by pricing-admin,
#    with readers queued behind it); then the detail pane of reports:pool,
#    each holder with its own token and TTL.
wait_for_all 90 '^. reports:pool +semaphore · [1-3]/3' '^. config:pricing +(shared · [2-9]|pricing-admin)'
shot shared.png
keys / ; t send-keys -t demo -l reports:pool; keys Enter
keys Enter
wait_for 'slot +2'
shot holders.png
keys Escape; keys Escape

# 3. Several keys at once, lock-delay and a deadlock: two account rows held
#    by transfer-1 together, backup:nightly delayed after its holder
#    crashed (backup-2 queued behind it), and the header's count of
#    deadlocks reported.
deadline=$((SECONDS + 120))
until (($(screen | grep -cE '^. accounts:[a-z]+ +transfer-1 ') == 2)) &&
	screen | grep -Eq '^. backup:nightly .*delayed' && screen | grep -Eq 'deadlocks [1-9]'; do
	((SECONDS < deadline)) || { echo "generate.sh: no transfer, delayed key and deadlock together in 120s; the screen:" >&2; screen >&2; exit 1; }
	sleep 0.2
done
shot scenes.png

# 4. The detail pane of backup:nightly in its lock-delay: the crashed
#    holder, the delay's length and end, backup-2 first in the queue.
keys / ; t send-keys -t demo -l backup:nightly; keys Enter
wait_for '^. backup:nightly .*delayed' 90
keys Enter
wait_for 'state +delayed, no grants'
shot delay-detail.png
keys Escape; keys Escape

# 5. The detail pane of ledger:balance: its waiters and its history, with a
#    steal and the zombie's refused write.
keys / ; t send-keys -t demo -l ledger; keys Enter
keys Enter
wait_for 'stale_write_rejected'
shot detail.png
keys Escape; keys Escape

# 6. The force-expire confirmation on the stuck lock.
keys / ; t send-keys -t demo -l reports:stuck; keys Enter
wait_for 'reports:stuck +report-gen'
keys x
wait_for 'Force-expire this lock\?'
shot confirm-expire.png

# 7. Free it, then the event log: the operator's force_expired, the waiter
#    taking the key at once, and a refused fenced write. The log scrolls by
#    several events a second, so the key is freed just after a zombie's
#    write is refused, while that event is still among the newest.
before=$(refused) deadline=$((SECONDS + 120))
until (($(refused) > before)); do
	((SECONDS < deadline)) || { echo "generate.sh: no fenced write refused in 120s" >&2; exit 1; }
	sleep 0.1
done
keys y
wait_for 'reports:stuck +report-retry'
keys Escape
keys e
wait_for_all 10 'force_expired +reports:stuck' '(acquired|stolen) +reports:stuck +owner report-retry' 'stale_write_rejected'
shot events.png

# 8. The hot keys page: where the demo's waiting went in the last minute
#    (w twice: 15m, 1h, 1m), by total wait, each count with its sparkline.
keys Escape
keys h
keys w
keys w
wait_for_all 30 'Hot keys — last 1m · ranked by total wait' '^. orders:shard-[0-9] +[0-9]'
sleep 2
shot hotkeys.png

# Quit and wait until the demo has stopped its server and removed its
# directory (killing tmux earlier would hang up on it mid-shutdown).
quit_demo() {
	keys q
	local deadline=$((SECONDS + 30))
	while t has-session -t demo 2>/dev/null && ((SECONDS < deadline)); do sleep 0.3; done
}
quit_demo

# 9. The blocking page, on a smaller cast so every chain fits: beside the
#    demo's own queues, a chain two waits deep under its root blocker,
#    staged with lockctl acquire on the demo's server (the header names it;
#    it trusts local connections). Two migrators each hold a key and wait
#    for the other's: the second wait would close the cycle and is refused
#    at once (exit 5), so the first waits on under its root blocker.
t new-session -d -s demo -x 120 -y 35 "exec '$work/lockctl' demo --seed $seed --workers 3 --keys 2"
wait_for 'private demo server.*● live'
dsn="postgres://postgres@$(screen | sed -nE '1s/^lockctl · ([^ ]+) \(private demo server\).*/\1/p')"
for hold in deploy:api=ci-runner-7 config:prod=release-bot schema:orders=migrator-a schema:users=migrator-b; do
	"$work/lockctl" acquire "${hold%%=*}" --owner "${hold#*=}" --ttl 10m --dsn "$dsn" >/dev/null
done
waiters=()
for wait in deploy:api=release-bot config:prod=web-2 config:prod=web-3 schema:users=migrator-a; do
	"$work/lockctl" acquire "${wait%%=*}" --owner "${wait#*=}" --ttl 10m --wait 10m --dsn "$dsn" >/dev/null 2>&1 &
	waiters+=($!)
	sleep 2
done
refused=0
"$work/lockctl" acquire schema:orders --owner migrator-b --ttl 10m --wait 10m --dsn "$dsn" >/dev/null 2>&1 || refused=$?
((refused == 5)) || { echo "generate.sh: migrator-b's wait closing the cycle exited $refused, want 5 (deadlock)" >&2; exit 1; }
sleep 20 # waits long enough to read as waits
keys b
wait_for_all 10 'ci-runner-7 +root blocker' 'migrator-b +root blocker'
shot blocking.png
kill "${waiters[@]}" 2>/dev/null || true
quit_demo

# 10. The light theme: the table mid-story, as a terminal with a light
#    background shows it.
t new-session -d -s demo -x 120 -y 35 "exec '$work/lockctl' demo --seed $seed --workers 14 --keys 8 --theme light"
wait_for 'fenced writes [0-9]+ ok, [1-9][0-9]* refused · steals [1-9]'
wait_for 'reports:stuck +report-gen'
keys g
sleep 2
shot light.png light
quit_demo
