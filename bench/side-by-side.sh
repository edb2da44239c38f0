#!/usr/bin/env bash
# side-by-side.sh runs `cohort bench` against Cohort and kfake, each in its
# own process, and prints one table of medians (issue 17):
#
#   commits: COMMITTERS committers, PPC partitions per OffsetCommit, for
#            DURATION: offsets/s, p50, p99, and the server's CPU time per
#            commit (user + system, from /proc, over the whole run with
#            its set-up, divided by the timed commits: steadier than the
#            rates on a shared machine)
#   join:    MEMBERS members joining one fresh group on a PARTITIONS-partition
#            topic at once: time to the last SyncGroup answer, generations
#
# Targets: Cohort with its defaults (Kafka's 3 s initial rebalance delay),
# Cohort with a 50 ms quiet window (--group-initial-rebalance-quiet 50ms),
# Cohort with the adaptive barrier (--group-initial-rebalance-adaptive),
# kfake in memory, and kfake persisting with an fsync per write. Where
# /dev/shm is a tmpfs, also Cohort with its data directory there
# (cohort-tmpfs): the same code, but an fsync costs next to nothing and a
# power loss loses everything, so the row is not a durable result; it
# shows how much of the gap to kfake is the disk's and how much the code
# path's. Every server gets a fresh temporary data directory and binds
# 127.0.0.1 on a free port (its address is read from its log line); every
# process this script starts is stopped when it exits.
#
# Usage: bench/side-by-side.sh   (from anywhere in the repository)
# Environment: RUNS (3), COMMITTERS (64), PPC (10), DURATION (5s),
# MEMBERS (500), PARTITIONS (1000), ONLY (commits or join: run only that
# benchmark; its columns show - for the other), TARGETS (the rows, by
# default all of: cohort cohort-quiet50ms cohort-adaptive cohort-tmpfs
# kfake kfake-fsync). The targets take turns round after round, each run
# on a fresh server and data directory.
set -euo pipefail

RUNS=${RUNS:-3}
COMMITTERS=${COMMITTERS:-64}
PPC=${PPC:-10}
DURATION=${DURATION:-5s}
MEMBERS=${MEMBERS:-500}
PARTITIONS=${PARTITIONS:-1000}
ONLY=${ONLY:-}
TARGETS=${TARGETS:-cohort cohort-quiet50ms cohort-adaptive cohort-tmpfs kfake kfake-fsync}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
shm=""
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	shm=$(mktemp -d /dev/shm/cohort-side-by-side.XXXXXX)
else
	TARGETS=${TARGETS//cohort-tmpfs/} # no tmpfs here: no such row
fi
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
	[ -z "$shm" ] || rm -rf "$shm"
}
trap cleanup EXIT

echo "building cohort and kfakeserve..." >&2
(cd "$root" && go build -o "$tmp/cohort" ./cmd/cohort && go build -o "$tmp/kfakeserve" ./bench/kfakeserve)

# start NAME PATTERN CMD...: runs CMD with its output in $tmp/NAME.log and
# sets addr to the address its log line matching PATTERN (…=HOST:PORT)
# gives, within 60 s.
start() {
	local name=$1 pattern=$2
	shift 2
	"$@" >"$tmp/$name.log" 2>&1 &
	pids+=($!)
	addr=""
	for _ in $(seq 600); do
		addr=$(grep -oE "$pattern=[^ ]+" "$tmp/$name.log" | head -1 | sed 's/.*=//') || true
		[ -n "$addr" ] && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	echo "$name did not log its address:" >&2
	cat "$tmp/$name.log" >&2
	exit 1
}

# stop_last stops the server started last.
stop_last() {
	kill "${pids[-1]}" 2>/dev/null || true
	wait "${pids[-1]}" 2>/dev/null || true
	unset 'pids[-1]'
}

# field NAME: the number of JSON field NAME on stdin (one field a line).
field() { sed -nE "s/.*\"$1\": ([0-9.eE+-]+).*/\1/p"; }

# median: the middle of the numbers on stdin (the lower middle of an even
# count).
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# cpu_ticks PID: the user + system CPU time PID has used, in clock ticks
# (the fields after the command name in /proc/PID/stat, which may itself
# hold spaces).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
hz=$(getconf CLK_TCK)

# round: the number on stdin to a whole one ("-" stays).
round() { awk '{ if ($1 == "-") print; else printf "%.0f\n", $1 }'; }

# serve TARGET DIR: starts TARGET's server on a fresh data directory DIR.
serve() {
	local cohort=("$tmp/cohort" serve --kafka-listen 127.0.0.1:0 --http-listen - --grpc-listen - --log-level info --data-dir "$2")
	case $1 in
	cohort | cohort-tmpfs) start "$1" 'listening" kafka' "${cohort[@]}" ;; # tmpfs: the directory differs
	cohort-quiet50ms) start "$1" 'listening" kafka' "${cohort[@]}" --group-initial-rebalance-quiet 50ms ;;
	cohort-adaptive) start "$1" 'listening" kafka' "${cohort[@]}" --group-initial-rebalance-adaptive ;;
	kfake) start "$1" 'listening addr' "$tmp/kfakeserve" ;;
	kfake-fsync) start "$1" 'listening addr' "$tmp/kfakeserve" --fsync --data-dir "$2" ;;
	*) echo "unknown target $1" >&2 && exit 2 ;;
	esac
}

# measure TARGET ROUND: one commit run and one join run against a fresh
# server of TARGET; appends a line to $tmp/TARGET.c and $tmp/TARGET.j.
measure() {
	local target=$1 round=$2 out before after dir="$tmp/$1-$2"
	[ "$target" = cohort-tmpfs ] && dir="$shm/$round"
	serve "$target" "$dir"
	if [ "$ONLY" = join ]; then
		echo "- - - -" >>"$tmp/$target.c"
	else
		echo "$target: commits, round $round of $RUNS" >&2
		before=$(cpu_ticks "${pids[-1]}")
		out=$("$tmp/cohort" bench commits --brokers "$addr" --format json \
			--committers "$COMMITTERS" --partitions-per-commit "$PPC" --duration "$DURATION")
		after=$(cpu_ticks "${pids[-1]}")
		echo "$(field offsets_per_s <<<"$out") $(field p50_ms <<<"$out") $(field p99_ms <<<"$out")" \
			"$(awk -v t=$((after - before)) -v hz="$hz" -v n="$(field commits <<<"$out")" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')" >>"$tmp/$target.c"
	fi
	if [ "$ONLY" = commits ]; then
		echo "- -" >>"$tmp/$target.j"
	else
		echo "$target: join, round $round of $RUNS" >&2
		out=$("$tmp/cohort" bench join --brokers "$addr" --format json \
			--members "$MEMBERS" --partitions "$PARTITIONS")
		echo "$(field last_sync_ms <<<"$out") $(field generations <<<"$out")" >>"$tmp/$target.j"
	fi
	stop_last
	rm -rf "$dir"
}

# The targets take turns, round after round, each run on a fresh server
# and data directory, so that a busy spell of a shared machine falls on
# all of them rather than on one target's runs.
for round in $(seq "$RUNS"); do
	for target in $TARGETS; do
		measure "$target" "$round"
	done
done

echo
echo "medians of $RUNS rounds (targets alternated, a fresh server each run); commits: $COMMITTERS committers x $PPC partitions per commit for $DURATION; join: $MEMBERS members, one group, $PARTITIONS partitions"
{
	printf 'TARGET\tOFFSETS/S\tP50-MS\tP99-MS\tSERVER-CPU-US/COMMIT\tLAST-SYNC-MS\tGENERATIONS\n'
	for target in $TARGETS; do
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" \
			"$(awk '{print $1}' "$tmp/$target.c" | median | round)" \
			"$(awk '{print $2}' "$tmp/$target.c" | median)" \
			"$(awk '{print $3}' "$tmp/$target.c" | median)" \
			"$(awk '{print $4}' "$tmp/$target.c" | median)" \
			"$(awk '{print $1}' "$tmp/$target.j" | median)" \
			"$(awk '{print $2}' "$tmp/$target.j" | median)"
	done
} | column -t -s $'\t'
