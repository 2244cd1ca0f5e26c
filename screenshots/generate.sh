#!/usr/bin/env bash
# Regenerates the PNGs in this directory from a running `lockctl demo`: the
# real console in a 120×35 tmux pane, captured with its colours
# (capture-pane -e) and rendered by freeze.
#
#   screenshots/generate.sh          # from the repository root or anywhere
#
# Needs: Go, tmux, PostgreSQL's server binaries (as for `lockctl demo`), and
# the Go module proxy (freeze is fetched with `go run`).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seed=${SEED:-7}
freeze=github.com/charmbracelet/freeze@v0.2.2
sock=lockctl-screenshots-$$
work=$(mktemp -d)
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/lockctl" .)
# freeze runs outside this module so `go run` does not touch go.mod.
(cd "$work" && go run "$freeze" --version >/dev/null)

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

keys() { t send-keys -t demo "$@"; sleep 0.6; }

# shot FILE: the pane as it is now, with colours, as a PNG. freeze v0.2.2
# ignores "default colour" (SGR 39 and 49), so the previous colour would
# bleed on; they are replaced by its window's own foreground and background.
shot() {
	t capture-pane -e -p -t demo |
		sed -e 's/\x1b\[39m/\x1b[38;2;197;200;198m/g' -e 's/\x1b\[49m/\x1b[48;2;23;23;23m/g' \
			>"$work/$1.ansi"
	(cd "$work" && go run "$freeze" --language ansi --window --padding 20 \
		--font.size 14 --output "$here/$1" <"$work/$1.ansi")
	echo "wrote screenshots/$1"
}

# More workers and keys than the defaults, so the table fills the pane.
t new-session -d -s demo -x 120 -y 35 "exec '$work/lockctl' demo --seed $seed --workers 14 --keys 8"

# 1. The lock table mid-story: a steal and a refused fenced write have
#    happened, workers are queued, the stuck report holds its hour.
wait_for 'fenced writes [0-9]+ ok, [1-9][0-9]* refused · steals [1-9]'
wait_for 'reports:stuck +report-gen'
keys g # the first row: the selection stays on the key that came first
sleep 2
shot console.png

# 2. The detail pane of ledger:balance: its waiters and its history, with a
#    steal and the zombie's refused write.
keys / ; t send-keys -t demo -l ledger; keys Enter
keys Enter
wait_for 'stale_write_rejected'
shot detail.png
keys Escape; keys Escape

# 3. The force-expire confirmation on the stuck lock.
keys / ; t send-keys -t demo -l reports:stuck; keys Enter
wait_for 'reports:stuck +report-gen'
keys x
wait_for 'Force-expire this lock\?'
shot confirm-expire.png

# 4. Free it, then the event log: the operator's force_expired, the waiter
#    taking the key at once, and fenced writes refused.
keys y
wait_for 'reports:stuck +report-retry'
keys Escape
keys e
wait_for 'force_expired'
wait_for 'stale_write_rejected'
shot events.png

# Quit and wait until the demo has stopped its server and removed its
# directory (killing tmux earlier would hang up on it mid-shutdown).
keys q
deadline=$((SECONDS + 30))
while t has-session -t demo 2>/dev/null && ((SECONDS < deadline)); do sleep 0.3; done
