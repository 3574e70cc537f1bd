// SPDX-License-Identifier: MIT
/* Requests and their expected replies: the frames the benchmarks send
 * (Ethernet, IPv4, UDP, the memcached frame header and text), the reply
 * each must get, the check of a reply against it, and one
 * BPF_PROG_TEST_RUN. */
#include "mb.h"

namespace mb {

const char *op_name(Op op)
{
	return op == Op::Get ? "get_hit" : op == Op::BinGet ? "bin_get_hit" : "set";
}

/* ---- requests and expected replies ---------------------------------------- */

/* "key:%012u" (16 bytes), padded with '-' to klen bytes (>= 16). */
std::string key_text(uint32_t k, uint32_t klen)
{
	char b[32];
	snprintf(b, sizeof(b), "key:%012u", k);
	std::string s(b);
	if (klen > s.size())
		s.append(klen - s.size(), '-');
	return s;
}

/* The value stored under key k: key-dependent, so a reply with another
 * key's bytes is caught. */
std::string value_for(uint32_t k, uint32_t vlen)
{
	std::string v(vlen, 'a');
	for (uint32_t j = 0; j < vlen; j++)
		v[j] = (char)('a' + (k * 7 + j) % 26);
	return v;
}

/* What the null store's single item holds. */
const std::string &null_value()
{
	static const std::string v = value_for(0x5eed);
	return v;
}

static uint16_t csum16(const void *p, size_t n)
{
	const uint8_t *b = static_cast<const uint8_t *>(p);
	uint32_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* The access policy as a default attach leaves it, so the checks cost what
 * they cost on a live interface: anyone allowed (one trie node) but only
 * frames to this host's MAC and address served. */
bool policy_as_attach(bpf_object *obj)
{
	if (xkv_object_open_policy(obj))
		return false;
	bpf_map *hm = bpf_object__find_map_by_name(obj, "host");
	bpf_map *lm = bpf_object__find_map_by_name(obj, "local_addrs");
	if (!hm || !lm)
		return false;
	xkv_host h = {};
	memcpy(h.mac, kServerMac, ETH_ALEN);
	h.flags = XKV_HOST_CHECK_MAC | XKV_HOST_CHECK_IP;
	uint32_t zero = 0, ip = htonl(kServerIp);
	uint8_t addr[1][16], plen = 96 + 24;
	xkv_addr_from_v4(addr[0], &ip);
	xkv_host_set_inline(&h, addr, 1); /* as xkv_host_sync leaves it */
	return !bpf_map_update_elem(bpf_map__fd(hm), &zero, &h, BPF_ANY) &&
	       !bpf_map_update_elem(bpf_map__fd(lm), addr[0], &plen, BPF_ANY);
}

/* Ethernet / IPv4 / UDP to port 11211 / 8-byte frame header / text. */
std::vector<uint8_t> make_packet(const std::string &text, uint16_t req_id)
{
	std::vector<uint8_t> p(kHdrLen + text.size());
	auto *eth = reinterpret_cast<ethhdr *>(p.data());
	auto *ip = reinterpret_cast<iphdr *>(p.data() + ETH_HLEN);
	auto *udp = reinterpret_cast<udphdr *>(p.data() + ETH_HLEN + 20);
	auto *fh = reinterpret_cast<xkv_udp_hdr *>(p.data() + ETH_HLEN + 28);

	memcpy(eth->h_dest, kServerMac, ETH_ALEN);
	memcpy(eth->h_source, kClientMac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)(p.size() - ETH_HLEN));
	ip->id = htons(req_id);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = htonl(kClientIp);
	ip->daddr = htonl(kServerIp);
	ip->check = htons(csum16(ip, 20));
	udp->source = htons(kClientPort);
	udp->dest = htons(XKV_DEFAULT_PORT);
	udp->len = htons((uint16_t)(p.size() - ETH_HLEN - 20));
	fh->req_id = htons(req_id);
	fh->seq = 0;
	fh->total = htons(1);
	fh->reserved = 0;
	memcpy(p.data() + kHdrLen, text.data(), text.size());
	/* a real UDP checksum, as a Linux client sends: the program verifies it */
	size_t ulen = p.size() - ETH_HLEN - 20;
	std::vector<uint8_t> ph(12 + ulen);
	memcpy(ph.data(), &ip->saddr, 8);
	ph[9] = IPPROTO_UDP;
	ph[10] = (uint8_t)(ulen >> 8);
	ph[11] = (uint8_t)ulen;
	memcpy(ph.data() + 12, udp, ulen);
	uint16_t c = csum16(ph.data(), ph.size());
	udp->check = htons(c ? c : 0xffff);
	return p;
}


constexpr uint32_t kOpaque = 0x5eedf00d;

/* A binary header (protocol_binary.h): magic, opcode, key and extras
 * length, status (a request's vbucket), body length, opaque; cas 0. */
static std::string bin_hdr(uint8_t magic, uint8_t op, uint16_t klen, uint8_t elen, uint32_t body)
{
	xkv_bin_hdr h{};
	h.magic = magic;
	h.opcode = op;
	h.keylen = htons(klen);
	h.extlen = elen;
	h.bodylen = htonl(body);
	h.opaque = kOpaque;
	return std::string(reinterpret_cast<const char *>(&h), sizeof(h));
}

std::string want_text(Op op, uint32_t key, bool null_store)
{
	if (op == Op::Set)
		return XKV_R_STORED;
	if (op == Op::BinGet) /* flags 0; the cas is the item's (take_cas) */
		return bin_hdr(XKV_BIN_RES, XKV_BIN_GET, 0, 4, 4 + kValLen) + std::string(4, '\0') +
		       (null_store ? null_value() : value_for(key));
	return "VALUE " + key_text(key) + " 0 " + std::to_string(kValLen) + "\r\n" +
	       (null_store ? null_value() : value_for(key)) + XKV_R_DATA_END;
}

Req make_req(Op op, uint32_t key, uint16_t req_id)
{
	std::string t;
	if (op == Op::Get)
		t = "get " + key_text(key) + "\r\n";
	else if (op == Op::BinGet)
		t = bin_hdr(XKV_BIN_REQ, XKV_BIN_GET, kKeyLen, 0, kKeyLen) + key_text(key);
	else
		t = "set " + key_text(key) + " 0 0 " + std::to_string(kValLen) + "\r\n" + value_for(key) +
		    "\r\n";
	uint32_t rlen = (uint32_t)(kHdrLen + want_text(op, key, false).size());
	return Req{key, req_id, rlen, make_packet(t, req_id)};
}

static std::string printable(const std::string &s)
{
	std::string o;
	for (unsigned char c : s) {
		char b[8];
		if (c == '\r')
			o += "\\r";
		else if (c == '\n')
			o += "\\n";
		else if (c < 0x20 || c > 0x7e)
			snprintf(b, sizeof(b), "\\x%02x", c), o += b;
		else
			o += (char)c;
	}
	return o;
}

/* Empty when out[0..n) is the reply to r with text want; else what differs. */
std::string check_reply(const uint8_t *out, uint32_t n, const Req &r, const std::string &want)
{
	char m[256];
	if (n < kHdrLen)
		return "reply of " + std::to_string(n) + " bytes is shorter than its headers";
	auto *eth = reinterpret_cast<const ethhdr *>(out);
	auto *ip = reinterpret_cast<const iphdr *>(out + ETH_HLEN);
	auto *udp = reinterpret_cast<const udphdr *>(out + ETH_HLEN + 20);
	auto *fh = reinterpret_cast<const xkv_udp_hdr *>(out + ETH_HLEN + 28);
	if (memcmp(eth->h_dest, kClientMac, ETH_ALEN) || memcmp(eth->h_source, kServerMac, ETH_ALEN) ||
	    eth->h_proto != htons(ETH_P_IP))
		return "reply Ethernet header is not the request's, swapped";
	if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP ||
	    ip->saddr != htonl(kServerIp) || ip->daddr != htonl(kClientIp) ||
	    ntohs(ip->tot_len) != n - ETH_HLEN || csum16(ip, 20) != 0) {
		snprintf(m, sizeof(m), "bad reply IPv4 header (tot_len %u for %u bytes, csum %s)",
			 ntohs(ip->tot_len), n - ETH_HLEN, csum16(ip, 20) ? "wrong" : "ok");
		return m;
	}
	if (udp->source != htons(XKV_DEFAULT_PORT) || udp->dest != htons(kClientPort) ||
	    ntohs(udp->len) != n - ETH_HLEN - 20) {
		snprintf(m, sizeof(m), "bad reply UDP header (ports %u->%u, len %u for %u bytes)",
			 ntohs(udp->source), ntohs(udp->dest), ntohs(udp->len), n - ETH_HLEN - 20);
		return m;
	}
	if (fh->req_id != htons(r.req_id) || fh->seq != 0 || fh->total != htons(1)) {
		snprintf(m, sizeof(m), "bad frame header: req_id %u (want %u) seq %u total %u",
			 ntohs(fh->req_id), r.req_id, ntohs(fh->seq), ntohs(fh->total));
		return m;
	}
	std::string got(reinterpret_cast<const char *>(out + kHdrLen), n - kHdrLen);
	if (got != want)
		return "reply text differs:\n  want \"" + printable(want) + "\"\n  got  \"" + printable(got) +
		       "\"";
	return "";
}

/* A binary hit's cas is the item's write stamp, which no request knows:
 * the reply's goes into want (the slow path would send the same); it must
 * not be 0.  Empty, or what is wrong. */
std::string take_cas(const uint8_t *out, uint32_t n, std::string *want)
{
	static const uint8_t zero[8] = {};
	size_t at = offsetof(xkv_bin_hdr, cas);

	if (n < kHdrLen + sizeof(xkv_bin_hdr) || want->size() < sizeof(xkv_bin_hdr))
		return "reply of " + std::to_string(n) + " bytes is shorter than a binary response";
	if (!memcmp(out + kHdrLen + at, zero, 8))
		return "binary hit with cas 0";
	want->replace(at, 8, reinterpret_cast<const char *>(out + kHdrLen + at), 8);
	return "";
}

/* ---- BPF_PROG_TEST_RUN ----------------------------------------------------- */


/* One run, repeat = 1.  out may be NULL: the kernel then copies nothing but
 * still reports the frame's size. */
Run test_run(int prog_fd, const Req &r, uint8_t *out)
{
	bpf_test_run_opts o{};
	o.sz = sizeof(o);
	o.data_in = r.pkt.data();
	o.data_size_in = (uint32_t)r.pkt.size();
	o.data_out = out;
	o.data_size_out = out ? kOutMax : 0;
	o.repeat = 1;
	Run res{};
	res.err = bpf_prog_test_run_opts(prog_fd, &o) ? -errno : 0;
	res.retval = o.retval;
	res.size = o.data_size_out;
	res.ns = o.duration;
	return res;
}

} // namespace mb
