// SPDX-License-Identifier: MIT
/* The matrix's stores: one layout loaded at a time for one key and value
 * size, filled to a fill level, the keys each cell sends, and the undo
 * that puts the store back after every mutating request. */
#include "mb.h"

namespace mb {

std::unique_ptr<MStore> g_mstore;
std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<MNull>> g_mnull;

void m_close_store()
{
	if (!g_mstore)
		return;
	if (g_mstore->store.L)
		xkv_store_close(&g_mstore->store);
	bpf_object__close(g_mstore->obj);
	g_mstore.reset();
}

/* Open and load layout L (NULL: the null store) for klen/vlen keys and
 * values with the given entries.  Empty or what went wrong. */
static std::string m_load(const xkv_layout *L, const std::string &name, uint32_t klen, uint32_t vlen,
		   uint32_t entries, bpf_object **obj, int *prog_fd)
{
	char err[XKV_ERRLEN] = "";
	xkv_config cfg;
	bool null_store = L == &xkv_layout_null;
	if (xkv_config_defaults(&cfg, null_store ? "hash_map" : name.c_str()))
		return "unknown layout " + name;
	cfg.key_cap = klen;
	cfg.val_cap = vlen;
	cfg.entries = entries;
	cfg.mode = XKV_MODE_TEST;
	if (L->hash_seeded)
		cfg.hash_seed = kBenchSeed;
	/* the null store is configured as hash_map, loaded as "null" */
	if (xkv_inproc_load(&cfg, L, obj, nullptr, err, sizeof(err)))
		return name + ": " + err;
	if (!policy_as_attach(*obj))
		return name + ": cannot set the access policy";
	*prog_fd = bpf_program__fd(xkv_object_prog(*obj));
	return "";
}

MNull *m_null(uint32_t klen, uint32_t vlen)
{
	auto &p = g_mnull[{klen, vlen}];
	if (p)
		return p.get();
	p = std::make_unique<MNull>();
	char err[XKV_ERRLEN] = "";
	p->err = m_load(&xkv_layout_null, "null", klen, vlen, 1, &p->hit, &p->hit_fd);
	if (p->err.empty())
		p->err = m_load(&xkv_layout_null, "null", klen, vlen, 1, &p->miss, &p->miss_fd);
	std::string v = value_for(0x5eed, vlen);
	if (p->err.empty() && xkv_null_fill(p->hit, 0, v.data(), vlen, err, sizeof(err)))
		p->err = err;
	return p.get();
}

MStore *m_store(const std::string &layout, uint32_t klen, uint32_t vlen)
{
	if (g_mstore && g_mstore->layout == layout && g_mstore->klen == klen && g_mstore->vlen == vlen)
		return g_mstore.get();
	m_close_store();
	g_mstore = std::make_unique<MStore>();
	MStore &b = *g_mstore;
	char err[XKV_ERRLEN] = "";
	b.layout = layout;
	b.klen = klen;
	b.vlen = vlen;
	b.L = xkv_layout_find(layout.c_str());
	if (!b.L) {
		b.err = "unknown layout " + layout;
		return &b;
	}
	b.err = m_load(b.L, layout, klen, vlen, mopt.capacity, &b.obj, &b.prog_fd);
	if (b.err.empty() && xkv_store_from_object(&b.store, b.L, b.obj, err, sizeof(err)))
		b.err = layout + ": " + err;
	return &b;
}

/* Grow (or, after a flush, rebuild) the store to ids [0, items). */
std::string m_set_fill(MStore &b, uint32_t items)
{
	if (b.filled == items)
		return "";
	auto t0 = std::chrono::steady_clock::now();
	if (items < b.filled) {
		int r = b.L->flush(&b.store, XKV_FLUSH_ALL);
		if (r)
			return b.layout + ": flush failed: " + strerror(-r);
		b.filled = 0;
	}
	std::vector<uint32_t> ks;
	for (uint32_t base = b.filled; base < items; base += opt.batch) {
		ks.clear();
		for (uint32_t k = base; k < items && k < base + opt.batch; k++)
			ks.push_back(k);
		std::string e = store_keys(b.store, b.layout, ks, b.klen, b.vlen);
		if (!e.empty())
			return e;
	}
	b.filled = items;
	b.live = b.L->count(&b.store);
	fprintf(stderr, "# matrix %s k%u v%u: %u of %u entries filled, %ld live, %.1f s\n",
		b.layout.c_str(), b.klen, b.vlen, items, mopt.capacity, b.live, secs_since(t0));
	return "";
}

/* Request keys for op: present ones (value checked) spread evenly over the
 * filled ids, or ids never stored (checked absent). */
std::string m_pick_keys(MStore &b, MOp op, std::vector<uint32_t> *out)
{
	auto it = std::make_unique<xkv_item>();
	uint32_t want = mopt.keys;
	if (m_hit_op(op)) {
		uint32_t stride = std::max(1u, b.filled / want), next = 0;
		for (uint32_t i = 0; i < want; i++) {
			uint32_t k = std::max(next, i * stride);
			for (; k < b.filled; k++) {
				std::string ks = key_text(k, b.klen), v = value_for(k, b.vlen);
				int r = b.L->get(&b.store, ks.data(), b.klen, it.get());
				if (r < 0)
					return b.layout + ": get " + ks + " failed: " + strerror(-r);
				if (r == 1 && it->len == b.vlen && !memcmp(it->data, v.data(), b.vlen))
					break;
			}
			if (k >= b.filled)
				return b.layout + ": only " + std::to_string(i) + " of " + std::to_string(want) +
				       " request keys are stored (" + std::to_string(b.live) + " live items)";
			out->push_back(k);
			next = k + 1;
		}
		return "";
	}
	for (uint32_t i = 0; i < want; i++) {
		uint32_t k = kMissBase + i;
		std::string ks = key_text(k, b.klen);
		int r = b.L->get(&b.store, ks.data(), b.klen, it.get());
		if (r != 0)
			return b.layout + ": key " + ks + " should be absent (get: " + std::to_string(r) + ")";
		out->push_back(k);
	}
	return "";
}

std::string m_undo_prepare(MStore &b, MOp op, const std::vector<uint32_t> &keys,
			   std::vector<MUndo> *undo)
{
	const xkv_config &c = b.store.cfg;
	if (b.layout == "arena") /* a key's slot is any of its window's: not undone here */
		return "arena: not in the matrix (its undo knows array_fnv's and set_assoc's slots only)";
	for (uint32_t k : keys) {
		MUndo u;
		u.key = k;
		std::string ks = key_text(k, b.klen);
		u.packed.assign(c.key_size + 8, 0);
		if (xkv_key_pack(&c, ks.data(), b.klen, u.packed.data()))
			return "cannot pack key " + ks;
		if (b.store.mm) { /* array_fnv: the key's slot; bucketed layouts: its whole bucket */
			bool sa = xkv_sa_layout(b.layout.c_str());
			uint64_t h = xkv_key_hash(c.hash_seed, u.packed.data(), b.klen);
			uint32_t idx = sa ? xkv_sa_bucket_of(h, xkv_sa_buckets(c.entries, c.entry_size))
					  : (uint32_t)(h % c.entries);
			u.slot = static_cast<uint8_t *>(b.store.mm) + (size_t)idx * b.store.slot_stride;
			u.bytes.assign(u.slot, u.slot + (sa ? b.store.slot_stride : c.entry_size));
		} else if (op == MOp::Delete) {
			std::string v = value_for(k, b.vlen);
			u.bytes.assign(c.entry_size, 0);
			auto *e = reinterpret_cast<xkv_entry *>(u.bytes.data());
			e->wtime_ns = xkv_now_ns();
			e->len = b.vlen;
			e->klen = b.klen;
			memcpy(e->data, v.data(), b.vlen);
		}
		undo->push_back(std::move(u));
	}
	return "";
}

/* Put the store back as it was before request u ran (untimed). */
std::string m_restore(MStore &b, MOp op, const MUndo &u)
{
	if (u.slot) {
		memcpy(u.slot, u.bytes.data(), u.bytes.size());
		return "";
	}
	if (op == MOp::SetNew) {
		if (bpf_map_delete_elem(b.store.store_fd, u.packed.data()))
			return b.layout + ": undoing set_new of " + key_text(u.key, b.klen) + ": " +
			       strerror(errno);
		return "";
	}
	int r = b.L->set(&b.store, key_text(u.key, b.klen).data(), b.klen,
			 reinterpret_cast<const xkv_entry *>(u.bytes.data()));
	if (r)
		return b.layout + ": undoing delete of " + key_text(u.key, b.klen) + ": " + strerror(-r);
	return "";
}

} // namespace mb
