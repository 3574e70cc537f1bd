#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/reflector on the testbed's server end: a UDP datagram to port 11211
# with a full UDP checksum, sent as a raw frame from the client end, comes
# back to a client socket from SERVER:11211 with the same payload — over IPv4
# and IPv6; the client's kernel verifies both checksums on the way in (none
# counted as bad).  Other traffic (ping) still passes.
# Environment: REFLECTOR_OBJ, TB_XDP_PASS_OBJ (paths), CAP_PREFIX.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib/testbed.sh
. "$here/../lib/testbed.sh"
# shellcheck source=../lib/check.sh
. "$here/../lib/check.sh"
: "${REFLECTOR_OBJ:=$TB_REPO/build/bench/reflector/reflector.bpf.o}"
[[ -f $REFLECTOR_OBJ ]] || tb_die "$REFLECTOR_OBJ not found (build it, or set REFLECTOR_OBJ)"

tb_up "${CAP_PREFIX:-xcr$$}"
ip -n "$TB_SRV_NS" link set dev "$TB_SRV_DEV" xdpdrv obj "$REFLECTOR_OBJ" sec xdp ||
	tb_die "cannot attach the reflector"
smac=$(ip -n "$TB_SRV_NS" -br link show "$TB_SRV_DEV" | awk '{print $3}')
cmac=$(ip -n "$TB_CLI_NS" -br link show "$TB_CLI_DEV" | awk '{print $3}')

for fam in 4 6; do
	out=$(tb_cli python3 - "$fam" "$TB_CLI_DEV" "$smac" "$cmac" "$TB_SRV_IP4" "$TB_CLI_IP4" \
		"$TB_SRV_IP6" "$TB_CLI_IP6" <<'PY'
import socket, struct, sys
fam, dev, smac, cmac, s4, c4, s6, c6 = sys.argv[1:]
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
payload = b"\0\7\0\0\0\1\0\0get key:0000000000001\r\n"
ulen = 8 + len(payload)
if fam == "6":
    src, dst = socket.inet_pton(socket.AF_INET6, c6), socket.inet_pton(socket.AF_INET6, s6)
    rx = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    rx.bind((c6, 40000))
    ph = src + dst + struct.pack("!IxxxB", ulen, 17)
else:
    src, dst = socket.inet_aton(c4), socket.inet_aton(s4)
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind((c4, 40000))
    ph = src + dst + struct.pack("!xBH", 17, ulen)
udp = struct.pack("!HHHH", 40000, 11211, ulen, 0) + payload
udp = udp[:6] + struct.pack("!H", csum(ph + udp) or 0xffff) + udp[8:]
if fam == "6":
    l3, et = struct.pack("!IHBB", 6 << 28, ulen, 17, 64) + src + dst, 0x86dd
else:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 1, 0, 64, 17, 0, src, dst)
    l3, et = h[:10] + struct.pack("!H", csum(h)) + h[12:], 0x0800
tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
tx.bind((dev, 0))
tx.send(mac(smac) + mac(cmac) + struct.pack("!H", et) + l3 + udp)
rx.settimeout(2)
try:
    d, a = rx.recvfrom(2048)
    print("same" if d == payload else "different", a[0], a[1])
except socket.timeout:
    print("none")
PY
	) || tb_die "the IPv$fam probe failed"
	srv=$TB_SRV_IP4
	((fam == 6)) && srv=$TB_SRV_IP6
	check "IPv$fam: the request came back unchanged from $srv 11211 ($out)" test "$out" = "same $srv 11211"
done
bad4=$(ip netns exec "$TB_CLI_NS" awk '/^Udp:/ {n++} /^Udp:/ && n == 2 {print $8}' /proc/net/snmp)
bad6=$(ip netns exec "$TB_CLI_NS" awk '$1 == "Udp6InCsumErrors" {print $2}' /proc/net/snmp6)
check "no UDP checksum errors on the client (IPv4 $bad4, IPv6 $bad6)" test "$bad4" = 0 -a "$bad6" = 0
if command -v ping >/dev/null; then
	check "ping still passes the reflector" tb_cli ping -c1 -W2 "$TB_SRV_IP4"
fi
exit $fail
