// SPDX-License-Identifier: MIT
/* The matrix: layout x operation x key size x value size x fill.  Its
 * requests and expected replies, one cell's validation and timing, and
 * the registration of every cell. */
#include "mb.h"

namespace mb {

/* ---- the matrix: layout x operation x key size x value size x fill ------- */

/* One layout loaded at a time (a 256 Ki-entry map of 1 KiB values is a few
 * hundred MB); cells are registered grouped by layout, key size and value
 * size, fills ascending, so each store is loaded once and filled up step by
 * step.  Every cell leaves the store as it found it (see m_restore). */

MatrixOptions mopt;

bool m_hit_op(MOp op)
{
	return op == MOp::GetHit || op == MOp::SetOver || op == MOp::Delete;
}

/* Does the op change the store (and so need undoing after every run)? */
static bool m_mutates(MOp op)
{
	return op == MOp::SetNew || op == MOp::Delete;
}

static std::string m_want(MOp op, uint32_t key, uint32_t klen, uint32_t vlen, bool null_store)
{
	switch (op) {
	case MOp::GetHit:
		return "VALUE " + key_text(key, klen) + " 0 " + std::to_string(vlen) + "\r\n" +
		       value_for(null_store ? 0x5eed : key, vlen) + XKV_R_DATA_END;
	case MOp::GetMiss:
		return XKV_R_END;
	case MOp::SetNew:
	case MOp::SetOver:
		return XKV_R_STORED;
	case MOp::Delete:
		return XKV_R_DELETED;
	}
	return "";
}

static Req m_req(MOp op, uint32_t key, uint16_t req_id, uint32_t klen, uint32_t vlen)
{
	std::string k = key_text(key, klen), t;
	if (op == MOp::GetHit || op == MOp::GetMiss)
		t = "get " + k + "\r\n";
	else if (op == MOp::Delete)
		t = "delete " + k + "\r\n";
	else
		t = "set " + k + " 0 0 " + std::to_string(vlen) + "\r\n" + value_for(key, vlen) + "\r\n";
	uint32_t rlen = (uint32_t)(kHdrLen + m_want(op, key, klen, vlen, false).size());
	return Req{key, req_id, rlen, make_packet(t, req_id)};
}

struct MCell {
	std::string layout;
	MOp op;
	uint32_t klen, vlen, fill;
};

static std::string m_cell_name(const MCell &c)
{
	return "matrix/" + std::string(kMOpNames[(int)c.op]) + "/" + c.layout + "/k" +
	       std::to_string(c.klen) + "/v" + std::to_string(c.vlen) + "/fill" + std::to_string(c.fill);
}

/* Every request once through the layout (undone after each if it mutates)
 * and through the null store, replies compared with the protocol. */
static std::string m_validate(MStore &b, int null_fd, const MCell &c, const std::vector<Req> &reqs,
		       const std::vector<MUndo> &undo)
{
	std::vector<uint8_t> out(kOutMax);
	for (int pass = 0; pass < 2; pass++) {
		bool null_store = pass == 1;
		for (size_t i = 0; i < reqs.size(); i++) {
			const Req &r = reqs[i];
			Run res = test_run(null_store ? null_fd : b.prog_fd, r, out.data());
			std::string where = std::string(null_store ? "null" : b.layout.c_str()) + " " +
					    kMOpNames[(int)c.op] + " " + key_text(r.key, c.klen) + ": ";
			if (res.err)
				return where + "BPF_PROG_TEST_RUN failed: " + strerror(-res.err);
			if (res.retval != XDP_TX)
				return where + "action " + std::to_string(res.retval) + ", want XDP_TX";
			std::string e = check_reply(out.data(), res.size, r,
						    m_want(c.op, r.key, c.klen, c.vlen, null_store));
			if (e.empty() && !null_store && m_mutates(c.op))
				e = m_restore(b, c.op, undo[i]);
			if (!e.empty())
				return where + e;
			g_validated++;
		}
	}
	return "";
}

static void bm_matrix(benchmark::State &st, const MCell &c)
{
	pin(0);
	MStore *b = m_store(c.layout, c.klen, c.vlen);
	MNull *nb = m_null(c.klen, c.vlen);
	std::string e = !b->err.empty() ? b->err : nb->err;
	if (e.empty())
		e = m_set_fill(*b, (uint32_t)((uint64_t)mopt.capacity * c.fill / 100));
	std::vector<uint32_t> keys;
	std::vector<MUndo> undo;
	std::vector<Req> reqs;
	if (e.empty())
		e = m_pick_keys(*b, c.op, &keys);
	if (e.empty() && m_mutates(c.op))
		e = m_undo_prepare(*b, c.op, keys, &undo);
	for (uint32_t i = 0; e.empty() && i < keys.size(); i++)
		reqs.push_back(m_req(c.op, keys[i], (uint16_t)i, c.klen, c.vlen));
	int null_fd = c.op == MOp::GetMiss ? nb->miss_fd : nb->hit_fd;
	if (e.empty())
		e = m_validate(*b, null_fd, c, reqs, undo);
	if (!e.empty()) {
		fail(st, m_cell_name(c) + ": " + e);
		return;
	}

	Timer lt, nt;
	lt.ns.reserve(st.max_iterations);
	size_t n = reqs.size(), i = 0, first = 0;
	uint32_t k = 0;
	bool mut = m_mutates(c.op);
	for (auto _ : st) {
		const Req &r = reqs[i];
		Run res = test_run(b->prog_fd, r, nullptr);
		if (!timed_ok(res, r)) {
			fail(st, m_cell_name(c) + " " + key_text(r.key, c.klen) + ": action " +
				 std::to_string(res.retval) + ", " + std::to_string(res.size) +
				 " bytes while timing (validated before)");
			break;
		}
		st.SetIterationTime(res.ns * 1e-9);
		lt.add(res.ns);
		if (mut) {
			std::string re = m_restore(*b, c.op, undo[i]);
			if (!re.empty()) {
				fail(st, m_cell_name(c) + ": " + re);
				break;
			}
		}
		if (++i == n)
			i = 0;
		if (++k < kNullBlock)
			continue;
		/* the same requests again, through the null store */
		k = 0;
		for (uint32_t j = 0; j < kNullBlock; j++) {
			const Req &q = reqs[(first + j) % n];
			Run nr = test_run(null_fd, q, nullptr);
			if (!timed_ok(nr, q)) {
				fail(st, m_cell_name(c) + ": null store: action " + std::to_string(nr.retval) +
					 ", " + std::to_string(nr.size) + " bytes while timing");
				return;
			}
			nt.add(nr.ns);
		}
		first = i;
	}
	if (st.error_occurred())
		return;
	for (uint32_t j = 0; nt.ns.empty() && j < std::min<size_t>(n, kNullBlock); j++)
		nt.add(test_run(null_fd, reqs[j], nullptr).ns);

	double mean = lt.mean(), nmean = nt.mean(), p50 = lt.p50(), np50 = nt.p50();
	st.counters["ns_per_op"] = mean;
	st.counters["p50_ns"] = p50;
	st.counters["null_ns"] = nmean;
	st.counters["null_p50_ns"] = np50;
	st.counters["x_null"] = nmean > 0 ? mean / nmean : 0;
	st.counters["x_null_p50"] = np50 > 0 ? p50 / np50 : 0;
	st.counters["live_items"] = (double)b->live;
	st.counters["fill_items"] = (double)b->filled;
	st.counters["capacity"] = (double)mopt.capacity;
}

void register_matrix()
{
	for (const std::string &l : mopt.layouts)
		for (uint32_t klen : mopt.key_sizes)
			for (uint32_t vlen : mopt.value_sizes)
				for (uint32_t fill : mopt.fills)
					for (MOp op : mopt.ops) {
						MCell c{l, op, klen, vlen, fill};
						auto *bm = benchmark::RegisterBenchmark(
							m_cell_name(c).c_str(),
							[c](benchmark::State &st) { bm_matrix(st, c); });
						bm->UseManualTime()->Iterations(mopt.iters);
					}
}

} // namespace mb
