#!/usr/bin/env bash
# Install Debian's Open MPI for dist's mpi engine (build tag gotpu_mpi) and
# its tests and bench:
#
#   libopenmpi-dev   mpi.h, libmpi.so and pkg-config's ompi-c (cgo)
#   openmpi-bin      mpirun (the tests run the ranks under it)
#   python3-mpi4py   the reference of `gotpu bench allreduce --engine mpi`
#   iproute2         ip netns (tools/mpi/netns.sh: two "hosts" on one machine)
#
#   tools/mpi/install.sh      # idempotent: returns at once when all are there
#
# Needs apt-get (Debian or Ubuntu) and root, or sudo.
set -euo pipefail

pkgs=(libopenmpi-dev openmpi-bin python3-mpi4py iproute2)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "tools/mpi/install.sh: apt-get not found; install ${missing[*]} (Open MPI, mpi4py) another way" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	sudo=(sudo)
fi
echo "tools/mpi/install.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
	"${sudo[@]}" apt-get update -q >&2
	"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
