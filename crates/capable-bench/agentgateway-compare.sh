#!/bin/sh
# capable's gateway and agentgateway side by side, in front of the same HTTP upstream,
# loaded by the same capable client (see BENCHMARKS.md, "agentgateway"). Not run in CI:
# it needs an agentgateway binary, built from its public source.
#
#   crates/capable-bench/agentgateway-compare.sh /path/to/agentgateway [--rounds 7] [-n 5000] [--json]
#
# It builds capable's release binaries, then runs `capable-bench-gateway --agentgateway`
# in a network namespace of its own that holds only loopback: agentgateway binds its
# port on every address, and there nothing but this run can reach it. Needs `unshare`
# and `ip` (util-linux, iproute2) and the right to make a namespace (root, or user
# namespaces allowed).
set -eu
if [ $# -lt 1 ]; then
    echo "usage: $0 AGENTGATEWAY_BINARY [capable-bench-gateway args...]" >&2
    exit 2
fi
binary=$(realpath "$1")
shift
cd "$(dirname "$0")/../.."
cargo build --release -p capable-cli -p capable-bench
exec unshare --map-root-user --net sh -c 'ip link set lo up && exec "$@"' sh \
    target/release/capable-bench-gateway --agentgateway "$binary" "$@"
