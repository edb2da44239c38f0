#!/usr/bin/env bash
# Runs every Cohort test on this machine, installing what the tests need
# first. `.ci/run` calls exactly this.
#
#   ./test.sh            the whole suite: gates, then go test -race ./...
#   ./test.sh -run Kcat  extra arguments go to `go test`
set -euo pipefail
cd "$(dirname "$0")"

# Pinned tool versions.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.7.0

step() { printf '\n== %s\n' "$*"; }

# 1. Test dependencies from Debian: real clients that nobody here wrote.
#    The tests fail (never skip) without them, so install what is missing.
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
# etcd 3.4 for internal/etcdtest's clusters of etcd processes. The tests
# use only members they start themselves, on free ports; the service the
# package starts under systemd is stopped below.
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# Chromium for the web page's browser tests (admin/web, e2e TestWebPage),
# driven headless through chromedp.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# -I: isolated, so the repo's own kafka/ directory (a Go package) is not
# taken for the Python module from the working directory.
/usr/bin/python3 -I -c 'from kafka import KafkaProducer' >/dev/null 2>&1 || need+=(python3-kafka)
for mod in snappy:python3-snappy lz4.frame:python3-lz4 zstandard:python3-zstandard; do
	/usr/bin/python3 -I -c "import ${mod%%:*}" >/dev/null 2>&1 || need+=("${mod##*:}")
done
if ((${#need[@]})); then
	step "installing test packages: ${need[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	# Under systemd, installing etcd-server starts an etcd on 2379 and
	# enables it at boot; nothing here wants it. (The containers here have
	# no systemd, and their policy-rc.d refuses the start.)
	if [[ " ${need[*]} " == *" etcd-server "* ]] && command -v systemctl >/dev/null 2>&1 &&
		systemctl is-active --quiet etcd 2>/dev/null; then
		$sudo systemctl disable --now etcd >/dev/null 2>&1 || true
	fi
fi
# JavaScript clients from npm, at the versions e2e/js/package-lock.json
# pins: (re)installed when node_modules is missing or older than the lock.
if [ ! -f e2e/js/node_modules/.package-lock.json ] || [ e2e/js/package-lock.json -nt e2e/js/node_modules ]; then
	step "installing JavaScript test clients (npm ci --prefix e2e/js)"
	npm ci --prefix e2e/js --no-audit --no-fund --loglevel=error >/dev/null
fi
# kafkactl, an operator CLI built on Sarama (e2e/kafkactl_test.go), at
# the pinned version, built from its module: `go install` fails on the
# module proxy's version list here, so a writable copy of the downloaded
# module is built in place, stamped with its version as its releases are.
# The binary is kept in the user cache directory under its version's
# name, shared by every checkout, and rebuilt only when it is missing or
# reports another version; the tests find it through COHORT_KAFKACTL.
KAFKACTL_MOD=github.com/deviceinsight/kafkactl/v5
KAFKACTL_VERSION=v5.4.0
export COHORT_KAFKACTL="${XDG_CACHE_HOME:-$HOME/.cache}/cohort/kafkactl-$KAFKACTL_VERSION/kafkactl"
# build_kafkactl builds it in the directory $1, beside its destination,
# and renames it into place, so that a concurrent run (another checkout)
# never sees half a binary. One && chain: set -e does not hold inside a
# function whose status an `if` tests.
build_kafkactl() {
	# The module's directory in the module cache: its path has no capital
	# letters, which the cache would escape.
	local src
	src="$(go env GOMODCACHE)/$KAFKACTL_MOD@$KAFKACTL_VERSION"
	(cd "$1" && GOWORK=off go mod download "$KAFKACTL_MOD@$KAFKACTL_VERSION") &&
		cp -R "$src" "$1/src" && chmod -R u+w "$1/src" &&
		(cd "$1/src" && GOWORK=off GOFLAGS=-buildvcs=false go build -trimpath \
			-ldflags "-s -w -X $KAFKACTL_MOD/cmd.Version=$KAFKACTL_VERSION" -o "$1/kafkactl" .) &&
		mv -f "$1/kafkactl" "$COHORT_KAFKACTL"
}
if [[ "$("$COHORT_KAFKACTL" version 2>/dev/null)" != *"version:\"$KAFKACTL_VERSION\""* ]]; then
	step "building kafkactl $KAFKACTL_VERSION into $COHORT_KAFKACTL"
	mkdir -p "$(dirname "$COHORT_KAFKACTL")"
	kbuild=$(mktemp -d "$(dirname "$COHORT_KAFKACTL")/build.XXXXXX")
	if ! build_kafkactl "$kbuild" >"$kbuild/log" 2>&1; then
		cat "$kbuild/log" >&2
		chmod -R u+w "$kbuild" # a copy of the read-only module cache
		rm -rf "$kbuild"
		echo "building kafkactl $KAFKACTL_VERSION failed" >&2
		exit 1
	fi
	rm -rf "$kbuild"
fi

# The project's module and its two test modules (e2e/, bench/: the real
# clients, kfake and etcd's server, kept out of the module an embedder
# imports), joined by go.work.
pkgs=(./e2e/... ./... ./bench/...)

# 2. Quality gates.
step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
step "go vet"
go vet -tags invariants "${pkgs[@]}"
step "staticcheck"
go run "$STATICCHECK" -tags invariants "${pkgs[@]}"

# 3. The suite, with the race detector on every package: most of them run
#    goroutines (the wire server, the log's group commit, the clients); and
#    with the invariants tag, so every shard runtime, in unit, crash and
#    end-to-end tests and in the binary they build, checks its machine as
#    it runs (coordinator/invariants.go).
#
#    Two go test runs side by side, so that there is always something to
#    read: the end-to-end package, the longest by far, with -v filtered to
#    each test's verdict as it finishes (go test prints a package's output
#    only once the packages named before it are done, so in one run the
#    rest would wait for it), and every other package, two at a time,
#    each printed as it finishes. Then the slowest packages and tests, and
#    the time taken.
step "go test -race"
start=$SECONDS
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(
	set +e
	go test -race -tags invariants -count=1 -timeout 20m -v "$@" ./e2e/ 2>&1 |
		tee "$out/e2e.log" |
		grep --line-buffered -E '^(--- FAIL|--- PASS|--- SKIP|FAIL|ok|PASS|panic:)' |
		grep --line-buffered -v '^PASS$' | sed -u 's/^/[e2e] /'
	echo "${PIPESTATUS[0]}" >"$out/e2e.status"
) &
e2e=$!
rest=()
for p in "${pkgs[@]}"; do
	[ "$p" = ./e2e/... ] && rest+=($(go list -f '{{.ImportPath}}' ./e2e/... | grep -vx 'github.com/cohort-dev/cohort/e2e')) || rest+=("$p")
done
set +e
go test -race -tags invariants -count=1 -timeout 20m -p 2 "$@" "${rest[@]}" 2>&1 | tee "$out/rest.log"
rest_status=${PIPESTATUS[0]}
wait "$e2e"
e2e_status=$(cat "$out/e2e.status")
set -e
if [ "$e2e_status" != 0 ]; then
	# Its failures in full: the filtered lines say which, not why.
	grep -vE '^(=== (RUN|PAUSE|CONT)|--- PASS)' "$out/e2e.log" | tail -n 400
fi
step "slowest packages"
grep -hE '^ok' "$out/e2e.log" "$out/rest.log" | awk '{print $3, $2}' | sort -rn | sed -n 1,8p # sed reads to the end: head would leave sort writing to a closed pipe (SIGPIPE, and pipefail fails the run)
step "slowest end-to-end tests"
grep -hE '^--- (PASS|FAIL)' "$out/e2e.log" | sed -E 's/^--- (PASS|FAIL): ([^ ]+) \(([0-9.]+)s\)/\3s \2/' | sort -rn | sed -n 1,10p
step "done in $((SECONDS - start)) s: end-to-end $([ "$e2e_status" = 0 ] && echo ok || echo FAILED), the rest $([ "$rest_status" = 0 ] && echo ok || echo FAILED)"
[ "$e2e_status" = 0 ] && [ "$rest_status" = 0 ]
