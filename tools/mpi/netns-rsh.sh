#!/usr/bin/env bash
# plm_rsh_agent of tools/mpi/netns.sh: Open MPI calls it as ssh would be,
# "netns-rsh.sh [ssh options] HOST COMMAND...", to start its daemon on
# HOST; this runs COMMAND in HOST's network namespace (and its own UTS
# namespace, hostname h1) instead.
set -euo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do
	shift
done
host=$1
shift
case "$host" in
10.77.0.1) ns=gotpu-h0 name=h0 ;;
10.77.0.2) ns=gotpu-h1 name=h1 ;;
*)
	echo "netns-rsh.sh: unknown host $host" >&2
	exit 1
	;;
esac
exec ip netns exec "$ns" unshare --uts sh -c "hostname $name; $*"
