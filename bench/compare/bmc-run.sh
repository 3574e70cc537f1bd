#!/bin/sh
# SPDX-License-Identifier: MIT
# Run a BMC build (Orange-OpenSource/bmc-cache, built by the user as
# docs/compare.md says; xdpkv ships none of its code) in front of the
# memcached that already listens in this network namespace:
#
#   bmc-run.sh BMC_DIR IFACE        (in the server's netns: tb_srv)
#
# BMC's loader (BMC_DIR/bmc, which opens BMC_DIR/bmc_kern.o) attaches its XDP
# program to IFACE and pins its TC egress program; this script then attaches
# that program to IFACE's egress (clsact), prints BMC-READY, and waits for the
# loader.  SIGTERM/SIGINT stop the loader (it detaches its XDP program); the
# pin and the clsact qdisc are removed on the way out.
set -u
dir=${1:?BMC_DIR}; ifc=${2:?IFACE}
pin=/sys/fs/bpf/bmc_tx_filter
idx=$(ip -o link show dev "$ifc" | cut -d: -f1) || exit 1
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || exit 1
rm -f "$pin"
cleanup() {
	tc qdisc del dev "$ifc" clsact 2>/dev/null
	rm -f "$pin"
}
trap 'kill -TERM $pid 2>/dev/null' INT TERM
# the loader opens argv[0]_kern.o: run it by its path in BMC_DIR
"$dir/bmc" "$idx" &
pid=$!
i=0
while [ ! -e "$pin" ]; do
	i=$((i + 1))
	if [ $i -gt 1200 ] || ! kill -0 $pid 2>/dev/null; then
		echo "bmc-run.sh: BMC's loader did not pin $pin (see its output above)" >&2
		kill -TERM $pid 2>/dev/null; wait $pid; cleanup; exit 1
	fi
	sleep 0.1
done
tc qdisc replace dev "$ifc" clsact && tc filter replace dev "$ifc" egress bpf object-pinned "$pin" ||
	{ kill -TERM $pid; wait $pid; cleanup; exit 1; }
echo BMC-READY
wait $pid
while kill -0 $pid 2>/dev/null; do wait $pid; done
cleanup
