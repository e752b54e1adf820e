#!/usr/bin/env bash
# Run an Open MPI job across two "hosts" on one machine: two network
# namespaces joined by a veth pair (10.77.0.1 in gotpu-h0, 10.77.0.2 in
# gotpu-h1), the second rank also in its own UTS namespace (hostname h1), so
# that MPI talks TCP between them and dist's mpi engine sees two hosts.
# mpirun runs in gotpu-h0 and starts the remote rank through
# tools/mpi/netns-rsh.sh (plm_rsh_agent) instead of ssh.
#
#   tools/mpi/netns.sh PROGRAM [ARGS...]     # 2 ranks, one per "host"
#   GOTPU_NETNS_ENV="A=1 B=2" tools/mpi/netns.sh ...   # -x each to the ranks
#
# Needs root (ip netns, unshare) and tools/mpi/install.sh. The namespaces
# are removed on exit.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [[ $(id -u) -ne 0 ]]; then
	echo "tools/mpi/netns.sh: needs root (ip netns)" >&2
	exit 1
fi
cleanup() {
	ip netns del gotpu-h0 2>/dev/null || true
	ip netns del gotpu-h1 2>/dev/null || true
}
cleanup
trap cleanup EXIT
ip netns add gotpu-h0
ip netns add gotpu-h1
ip link add gotpu-v0 netns gotpu-h0 type veth peer name gotpu-v1 netns gotpu-h1
ip -n gotpu-h0 addr add 10.77.0.1/24 dev gotpu-v0
ip -n gotpu-h1 addr add 10.77.0.2/24 dev gotpu-v1
for ns in gotpu-h0 gotpu-h1; do
	ip -n "$ns" link set lo up
done
ip -n gotpu-h0 link set gotpu-v0 up
ip -n gotpu-h1 link set gotpu-v1 up

xs=()
for kv in ${GOTPU_NETNS_ENV:-}; do
	xs+=(-x "$kv")
done
ip netns exec gotpu-h0 mpirun --allow-run-as-root --enable-recovery \
	--mca orte_abort_on_non_zero_status 0 \
	--mca plm_rsh_agent "$here/netns-rsh.sh" \
	--mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
	--host 10.77.0.1:1,10.77.0.2:1 -np 2 --tag-output "${xs[@]}" "$@"
