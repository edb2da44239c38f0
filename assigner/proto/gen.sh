#!/usr/bin/env bash
# Regenerates assigner/kafkaassignerpb from the .proto, with pinned tools:
#   protoc 3.21.12 (Debian bookworm's protobuf-compiler; installed if missing),
#   protoc-gen-go v1.36.12 and protoc-gen-go-grpc v1.6.2 (built from the Go
#   module proxy into a temporary directory).
# Run from anywhere: bash assigner/proto/gen.sh
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v protoc >/dev/null; then
	apt-get install -y -q protobuf-compiler >/dev/null
fi
case "$(protoc --version)" in
"libprotoc 3.21."*) ;;
*) echo "gen.sh: want protoc 3.21.x, have $(protoc --version)" >&2; exit 1 ;;
esac
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN=$bin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN=$bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
out=../kafkaassignerpb
mkdir -p "$out"
PATH=$bin:$PATH protoc -I . \
	--go_out="$out" --go_opt=paths=source_relative \
	--go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
	kafka_assigner/v1/kafka_assigner.proto
# source_relative keeps the proto's directories; the package is flat.
mv "$out"/kafka_assigner/v1/*.go "$out"/
rm -r "$out"/kafka_assigner
