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
# benchmark; its columns show - for the other).
set -euo pipefail

RUNS=${RUNS:-3}
COMMITTERS=${COMMITTERS:-64}
PPC=${PPC:-10}
DURATION=${DURATION:-5s}
MEMBERS=${MEMBERS:-500}
PARTITIONS=${PARTITIONS:-1000}
ONLY=${ONLY:-}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
shm=""
[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && shm=$(mktemp -d /dev/shm/cohort-side-by-side.XXXXXX)
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

# measure TARGET: RUNS commit runs and RUNS join runs against $addr; adds a
# row to $tmp/table.
measure() {
	local target=$1 i out
	: >"$tmp/c" && : >"$tmp/j"
	local commits=$RUNS joins=$RUNS
	[ "$ONLY" = join ] && commits=0 && echo "- - - -" >>"$tmp/c"
	[ "$ONLY" = commits ] && joins=0 && echo "- -" >>"$tmp/j"
	for i in $(seq "$commits"); do
		echo "$target: commits run $i of $RUNS" >&2
		local before after
		before=$(cpu_ticks "${pids[-1]}")
		out=$("$tmp/cohort" bench commits --brokers "$addr" --format json \
			--committers "$COMMITTERS" --partitions-per-commit "$PPC" --duration "$DURATION")
		after=$(cpu_ticks "${pids[-1]}")
		echo "$(field offsets_per_s <<<"$out") $(field p50_ms <<<"$out") $(field p99_ms <<<"$out")" \
			"$(awk -v t=$((after - before)) -v hz="$hz" -v n="$(field commits <<<"$out")" 'BEGIN {printf "%.1f", t / hz * 1e6 / n}')" >>"$tmp/c"
	done
	for i in $(seq "$joins"); do
		echo "$target: join run $i of $RUNS" >&2
		out=$("$tmp/cohort" bench join --brokers "$addr" --format json \
			--members "$MEMBERS" --partitions "$PARTITIONS")
		echo "$(field last_sync_ms <<<"$out") $(field generations <<<"$out")" >>"$tmp/j"
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" \
		"$(awk '{print $1}' "$tmp/c" | median | round)" \
		"$(awk '{print $2}' "$tmp/c" | median)" \
		"$(awk '{print $3}' "$tmp/c" | median)" \
		"$(awk '{print $4}' "$tmp/c" | median)" \
		"$(awk '{print $1}' "$tmp/j" | median)" \
		"$(awk '{print $2}' "$tmp/j" | median)" >>"$tmp/table"
}

: >"$tmp/table"
serve=("$tmp/cohort" serve --kafka-listen 127.0.0.1:0 --http-listen - --grpc-listen - --log-level info)

start cohort 'listening" kafka' "${serve[@]}" --data-dir "$tmp/cohort-data"
measure cohort
stop_last

start cohort-quiet50ms 'listening" kafka' "${serve[@]}" --data-dir "$tmp/cohort-quiet50ms-data" --group-initial-rebalance-quiet 50ms
measure cohort-quiet50ms
stop_last

start cohort-adaptive 'listening" kafka' "${serve[@]}" --data-dir "$tmp/cohort-adaptive-data" --group-initial-rebalance-adaptive
measure cohort-adaptive
stop_last

if [ -n "$shm" ]; then
	start cohort-tmpfs 'listening" kafka' "${serve[@]}" --data-dir "$shm/cohort-data"
	measure cohort-tmpfs
	stop_last
fi

start kfake 'listening addr' "$tmp/kfakeserve"
measure kfake
stop_last

start kfake-fsync 'listening addr' "$tmp/kfakeserve" --fsync --data-dir "$tmp/kfake-fsync-data"
measure kfake-fsync
stop_last

echo
echo "medians of $RUNS runs; commits: $COMMITTERS committers x $PPC partitions per commit for $DURATION; join: $MEMBERS members, one group, $PARTITIONS partitions"
{
	printf 'TARGET\tOFFSETS/S\tP50-MS\tP99-MS\tSERVER-CPU-US/COMMIT\tLAST-SYNC-MS\tGENERATIONS\n'
	cat "$tmp/table"
} | column -t -s $'\t'
