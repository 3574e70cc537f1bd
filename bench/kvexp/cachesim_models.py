# SPDX-License-Identifier: MIT
"""The request sequence of `xkv-kvexp hitratio` regenerated in Python, and
the reference models its results are checked against.

Used by hitratio_vs_cachesim.py (the full check, with libCacheSim) and by
check_hitratio.py (the ctest smoke test, own references only: no PyPI).

Generator (hitratio.c has the same, and each of its runs reports trace_fnv,
an FNV-1a 64 checksum of its ranks, which gen_trace's result must match):
  splitmix64(state = seed); u = (next >> 11) * 2^-53
  zipf(alpha): rank = first k with cdf[k] > u * cdf[W-1], cdf[k] = sum (j+1)^-alpha
  uniform:     rank = next % W
Key id = rank; key text "key:%012u" padded with '-' to the key size.

Own models (pure Python, independent of the kernel code; placement is the
layouts' keyed hash re-implemented here, so that hash placement is the same
in the model as in the map):
  lru_own          exact LRU over `entries` items
  direct_mapped    array_fnv: slot = hash % entries, a new key replaces the slot's item
  set_clock_own    set_assoc: bucket = (u32)hash % (entries / ways), CLOCK in each bucket
                   (empty way first, lowest index; else sweep from the hand, a set
                   ref bit is cleared and passed; the hand stops past the victim)
  set_sieve_own    sieve: the same buckets, SIEVE in each: a list of the bucket's keys
                   oldest first, a new key appended; the hand (a key, or none = the
                   oldest) walks towards the newest, wrapping, clearing visited bits;
                   it stops on the key after the victim
  set_s3fifo_own   s3fifo: the same buckets, S3-FIFO in each: a small FIFO (1 way)
                   and a main FIFO (freq 0..3) in one list, a ring of 8 ghost tags
                   (the hash's top 16 bits) of keys evicted from small
  window_oldest    arena: home = hash % entries, a key lives in one of the 4 slots from
                   home on; a new key takes the first empty slot, else the slot written
                   longest ago (hits do not refresh it)
  no_eviction      hash_map/percpu: items are stored until `entries` are live, then refused

libCacheSim (the full check, PyPI libcachesim): LRU for lru; one Clock of `ways`
objects per set for set_assoc and one LRU of one object per slot for array_fnv,
each request routed by the layout's placement hash; FIFO for arena and LRU for
hash_map as context curves (libCacheSim has no oldest-of-window or no-eviction
policy: the own models are the reference there).
"""
import bisect
from collections import OrderedDict

M64 = (1 << 64) - 1
FNV_OFF, FNV_PRIME = 0xcbf29ce484222325, 0x100000001b3


# ---- the request sequence -------------------------------------------------------

def zipf_cdf(alpha, keys):
    cdf, s = [], 0.0
    for k in range(keys):
        s += float(k + 1) ** -alpha  # C pow(): the same libm call
        cdf.append(s)
    return cdf


def gen_trace(dist, keys, seed, n, _cdf_cache={}):
    """dist: 'uniform' or a Zipf alpha (float).  Returns (ranks, trace_fnv)."""
    state = seed & M64
    out = []
    if dist == "uniform":
        for _ in range(n):
            state = (state + 0x9e3779b97f4a7c15) & M64
            z = state
            z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
            z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
            out.append((z ^ (z >> 31)) % keys)
    else:
        ck = (float(dist), keys)
        if ck not in _cdf_cache:
            _cdf_cache[ck] = zipf_cdf(float(dist), keys)
        cdf = _cdf_cache[ck]
        total, last = cdf[-1], keys - 1
        br = bisect.bisect_right
        for _ in range(n):
            state = (state + 0x9e3779b97f4a7c15) & M64
            z = state
            z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
            z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
            z ^= z >> 31
            r = br(cdf, (z >> 11) * (2.0 ** -53) * total)
            out.append(r if r < last else last)
    h = FNV_OFF
    for r in out:
        h = ((h ^ r) * FNV_PRIME) & M64
    return out, "%016x" % h


# ---- the layouts' placement hash (common/hash.h) ----------------------------------

def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def _sipround(v0, v1, v2, v3):
    v0 = (v0 + v1) & M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & M64; v3 = _rotl(v3, 16); v3 ^= v2
    v0 = (v0 + v3) & M64; v3 = _rotl(v3, 21); v3 ^= v0
    v2 = (v2 + v1) & M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash13(k0, k1, data):
    v0, v1 = k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d
    v2, v3 = k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573
    n = len(data)
    for i in range(n // 8):
        m = int.from_bytes(data[i * 8:i * 8 + 8], "little")
        v3 ^= m
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0 ^= m
    b = ((n & 0xff) << 56) | int.from_bytes(data[n // 8 * 8:], "little")
    v3 ^= b
    v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= b
    v2 ^= 0xff
    for _ in range(3):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def seed_k1(seed):
    z = (seed + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)


def key_bytes(i, klen):
    return ("key:%012u" % i).ljust(klen, "-").encode()


def key_lengths(params):
    """A run's key sizes: one for every key (params key_size), or, under a
    production workload (--workload etc|twitter), key id i's size: byte i of
    params key_sizes_hex, as xkv-kvexp hitratio printed it."""
    if params.get("key_sizes_hex"):
        return bytes.fromhex(params["key_sizes_hex"])
    return params["key_size"]


def key_hashes(keys, klen, seed, _cache={}):
    """The placement hash of key ids 0..keys-1 (seed 0: FNV-1a, as hash.h);
    klen: every key's size, or a sequence of each key's (key_lengths)."""
    ck = (keys, klen if isinstance(klen, int) else bytes(klen), seed)
    kl = (lambda i: klen) if isinstance(klen, int) else (lambda i: klen[i])
    if ck not in _cache:
        if seed:
            k1 = seed_k1(seed)
            _cache[ck] = [siphash13(seed, k1, key_bytes(i, kl(i))) for i in range(keys)]
        else:
            hs = []
            for i in range(keys):
                h = FNV_OFF
                for c in key_bytes(i, kl(i)):
                    h = ((h ^ c) * FNV_PRIME) & M64
                hs.append(h)
            _cache[ck] = hs
    return _cache[ck]


def sa_ways(entry_size):
    """set_assoc ways per bucket (variants/set_assoc/bucket.h)."""
    line = (entry_size + 63) & ~63
    stride = line if line - entry_size <= entry_size // 8 else (entry_size + 7) & ~7
    return 8 if stride <= 512 else 4


# ---- own models: each returns the hits among trace[warm:] --------------------------

def lru_own(trace, warm, entries):
    c = OrderedDict()
    hits = 0
    for i, k in enumerate(trace):
        if k in c:
            c.move_to_end(k)
            hits += i >= warm
        else:
            c[k] = None
            if len(c) > entries:
                c.popitem(last=False)
    return hits


def direct_mapped(trace, warm, entries, hashes):
    slot = [h % entries for h in hashes]
    table = [-1] * entries
    hits = 0
    for i, k in enumerate(trace):
        s = slot[k]
        if table[s] == k:
            hits += i >= warm
        else:
            table[s] = k
    return hits


def set_clock_own(trace, warm, entries, ways, hashes):
    nb = entries // ways
    bucket = [(h & 0xffffffff) % nb for h in hashes]
    keys = [[-1] * ways for _ in range(nb)]
    ref = [[0] * ways for _ in range(nb)]
    hand = [0] * nb
    where = {}  # key -> (bucket, way)
    hits = 0
    for i, k in enumerate(trace):
        w = where.get(k)
        if w is not None:
            ref[w[0]][w[1]] = 1
            hits += i >= warm
            continue
        b = bucket[k]
        kb, rb = keys[b], ref[b]
        try:
            v = kb.index(-1)
        except ValueError:
            h = hand[b]
            while rb[h]:
                rb[h] = 0
                h = (h + 1) % ways
            v = h
            hand[b] = (v + 1) % ways
            del where[kb[v]]
        kb[v] = k
        rb[v] = 0
        where[k] = (b, v)
    return hits


def set_sieve_own(trace, warm, entries, ways, hashes):
    nb = entries // ways
    bucket = [(h & 0xffffffff) % nb for h in hashes]
    keys = [[] for _ in range(nb)]  # oldest first
    hand = [None] * nb              # the key the hand is on; None: the oldest
    visited = {}
    hits = 0
    for i, k in enumerate(trace):
        if k in visited:
            visited[k] = 1
            hits += i >= warm
            continue
        b = bucket[k]
        kb = keys[b]
        if len(kb) == ways:
            j = 0 if hand[b] is None else kb.index(hand[b])
            while visited[kb[j]]:
                visited[kb[j]] = 0
                j = j + 1 if j + 1 < len(kb) else 0
            del visited[kb.pop(j)]
            hand[b] = kb[j] if j < len(kb) else None
        kb.append(k)
        visited[k] = 0
    return hits


def set_s3fifo_own(trace, warm, entries, ways, hashes, small_ways=1, ghosts=8):
    nb = entries // ways
    bucket = [(h & 0xffffffff) % nb for h in hashes]
    tag = [(h >> 48) or 1 for h in hashes]
    order = [[] for _ in range(nb)]   # the bucket's keys, oldest first (both queues)
    ghost = [[0] * ghosts for _ in range(nb)]
    ghead = [0] * nb
    freq, small = {}, {}
    hits = 0
    for i, k in enumerate(trace):
        if k in freq:
            freq[k] = min(freq[k] + 1, 3)
            hits += i >= warm
            continue
        b = bucket[k]
        ob = order[b]
        fresh = len(ob) < ways
        if not fresh:
            while True:
                sq = [x for x in ob if small[x]]
                x = sq[0] if sq else next(x for x in ob if not small[x])
                if sq and freq[x] >= 2:      # small -> main
                    small[x], freq[x] = False, 0
                elif not sq and freq[x] > 0:  # main: kept, one less
                    freq[x] -= 1
                else:
                    break
                ob.remove(x)
                ob.append(x)
            if small[x]:
                ghost[b][ghead[b]] = tag[x]
                ghead[b] = (ghead[b] + 1) % ghosts
            ob.remove(x)
            del freq[x], small[x]
        gb = ghost[b]
        in_ghost = tag[k] in gb
        if in_ghost:
            gb[gb.index(tag[k])] = 0
        nsmall = sum(small[x] for x in ob)
        small[k] = not (in_ghost or (fresh and nsmall >= small_ways))
        freq[k] = 0
        ob.append(k)
    return hits


def window_oldest(trace, warm, entries, hashes, window=4):
    home = [h % entries for h in hashes]
    win = min(window, entries)
    slot_key = [-1] * entries
    stamp = [0] * entries
    where = {}
    hits = 0
    for i, k in enumerate(trace):
        if k in where:
            hits += i >= warm
            continue
        h = home[k]
        victim, oldest = -1, None
        for j in range(win):
            s = h + j
            if s >= entries:
                s -= entries
            if slot_key[s] < 0:
                victim = s
                break
            if oldest is None or stamp[s] < oldest:
                oldest, victim = stamp[s], s
        if slot_key[victim] >= 0:
            del where[slot_key[victim]]
        slot_key[victim] = k
        stamp[victim] = i + 1
        where[k] = victim
    return hits


def no_eviction(trace, warm, entries):
    stored = set()
    hits = 0
    for i, k in enumerate(trace):
        if k in stored:
            hits += i >= warm
        elif len(stored) < entries:
            stored.add(k)
    return hits


# ---- libCacheSim (optional import: the full check only) -----------------------------

def lcs_run(make, trace, warm):
    """One libCacheSim cache over the trace; hits among trace[warm:]."""
    import libcachesim as lcs
    c = make(lcs)
    r = lcs.Request()
    r.obj_size = 1
    g = c.get
    hits = 0
    for i, k in enumerate(trace):
        r.obj_id = k + 1  # obj_id 0 is avoided
        if g(r) and i >= warm:
            hits += 1
    return hits


def lcs_lru(trace, warm, entries):
    return lcs_run(lambda l: l.LRU(entries, hashpower=max(4, entries.bit_length() + 1)), trace, warm)


def lcs_clock(trace, warm, entries):
    return lcs_run(lambda l: l.Clock(entries, hashpower=max(4, entries.bit_length() + 1)), trace, warm)


def lcs_per_set(make, trace, warm, entries, ways, hashes):
    """One libCacheSim cache of `ways` objects per bucket (make(lcs, ways)),
    each request sent to its key's bucket by the layout's placement."""
    import libcachesim as lcs
    nb = entries // ways
    bucket = [(h & 0xffffffff) % nb for h in hashes]
    caches = [make(lcs, ways) for _ in range(nb)]
    r = lcs.Request()
    r.obj_size = 1
    hits = 0
    for i, k in enumerate(trace):
        r.obj_id = k + 1
        if caches[bucket[k]].get(r) and i >= warm:
            hits += 1
    return hits


def lcs_fifo(trace, warm, entries):
    return lcs_run(lambda l: l.FIFO(entries, hashpower=max(4, entries.bit_length() + 1)), trace, warm)


def lcs_slot_per_key(trace, warm, entries, hashes):
    """array_fnv with libCacheSim: one libCacheSim LRU of a single object per
    slot, each request sent to its key's slot (hash % entries, the layout's
    placement): a one-object cache replaces its object on every miss, which
    is direct mapping."""
    import libcachesim as lcs
    slot = [h % entries for h in hashes]
    caches = {}
    r = lcs.Request()
    r.obj_size = 1
    hits = 0
    for i, k in enumerate(trace):
        c = caches.get(slot[k])
        if c is None:
            c = caches[slot[k]] = lcs.LRU(1, hashpower=2)
        r.obj_id = k + 1
        if c.get(r) and i >= warm:
            hits += 1
    return hits


def lcs_clock_per_set(trace, warm, entries, ways, hashes):
    """set_assoc with libCacheSim: one libCacheSim Clock of `ways` objects per
    bucket, so the policy inside a set is libCacheSim's CLOCK."""
    return lcs_per_set(lambda l, n: l.Clock(n, hashpower=4), trace, warm, entries, ways, hashes)


def lcs_sieve(trace, warm, entries):
    return lcs_run(lambda l: l.Sieve(entries, hashpower=max(4, entries.bit_length() + 1)), trace, warm)


def lcs_s3fifo(trace, warm, entries):
    return lcs_run(lambda l: l.S3FIFO(entries, hashpower=max(4, entries.bit_length() + 1)), trace, warm)


# What each layout implements: (reference name, function(trace, warm, row) -> hits).
# The first is the one agreement is judged on; `own` is the no-PyPI reference.
def models(layout, row, keys, klen, use_lcs, cpus=1):
    entries = row["entries"]
    seed = int(row.get("hash_seed", "0"), 16)
    hs = (lambda: key_hashes(keys, klen, seed))
    out = []
    if layout == "lru_no_common_lru":
        # BPF_F_NO_COMMON_LRU deals the elements out to one LRU list per
        # possible CPU and a CPU evicts from its own list only
        # (bpf_percpu_lru_pop_free; docs/layouts.md, Lesson 6): one pinned
        # caller has entries / cpus of them
        share = max(1, entries // max(1, cpus))
        if use_lcs:
            out.append(("libCacheSim LRU of one CPU's share",
                        lambda t, w: lcs_lru(t, w, share)))
        out.append(("own LRU of one CPU's share", lambda t, w: lru_own(t, w, share)))
    elif layout in ("lru", "lru_percpu"):
        if use_lcs:
            out.append(("libCacheSim LRU", lambda t, w: lcs_lru(t, w, entries)))
        out.append(("own LRU", lambda t, w: lru_own(t, w, entries)))
    elif layout == "set_assoc":
        ways = sa_ways(row["entry_size"])
        if use_lcs:
            out.append(("libCacheSim CLOCK per set",
                        lambda t, w: lcs_clock_per_set(t, w, entries, ways, hs())))
        out.append(("own CLOCK per set", lambda t, w: set_clock_own(t, w, entries, ways, hs())))
        if use_lcs:
            out.append(("libCacheSim CLOCK global", lambda t, w: lcs_clock(t, w, entries)))
    elif layout == "sieve":
        ways = sa_ways(row["entry_size"])
        if use_lcs:
            out.append(("libCacheSim SIEVE per set",
                        lambda t, w: lcs_per_set(lambda l, n: l.Sieve(n, hashpower=4), t, w, entries,
                                                 ways, hs())))
        out.append(("own SIEVE per set", lambda t, w: set_sieve_own(t, w, entries, ways, hs())))
        if use_lcs:
            out.append(("libCacheSim SIEVE global", lambda t, w: lcs_sieve(t, w, entries)))
    elif layout == "s3fifo":
        # libCacheSim's S3FIFO cannot run per set: 10 % of 8 objects is a
        # small FIFO of 0, which admits nothing.  The own per-set model is
        # the reference; libCacheSim's global S3-FIFO is beside it.
        ways = sa_ways(row["entry_size"])
        out.append(("own S3-FIFO per set", lambda t, w: set_s3fifo_own(t, w, entries, ways, hs())))
        if use_lcs:
            out.append(("libCacheSim S3-FIFO global", lambda t, w: lcs_s3fifo(t, w, entries)))
    elif layout == "array_fnv":
        if use_lcs:
            out.append(("libCacheSim 1-object LRU per slot",
                        lambda t, w: lcs_slot_per_key(t, w, entries, hs())))
        out.append(("own direct-mapped", lambda t, w: direct_mapped(t, w, entries, hs())))
    elif layout == "arena":
        out.append(("own oldest-of-window", lambda t, w: window_oldest(t, w, entries, hs())))
        if use_lcs:  # oldest-written of 4 slots is FIFO with little associativity
            out.append(("libCacheSim FIFO (context)", lambda t, w: lcs_fifo(t, w, entries)))
    elif layout in ("hash_map", "percpu"):
        out.append(("own no-eviction", lambda t, w: no_eviction(t, w, entries)))
    if use_lcs and layout not in ("lru", "lru_percpu", "lru_no_common_lru", "arena"):
        out.append(("libCacheSim LRU (context)", lambda t, w: lcs_lru(t, w, entries)))
    return out


def lcs_curve(models):
    """The libCacheSim model of a point's models, or None: the reference
    where it is libCacheSim's, else the first libCacheSim context model."""
    names = [n for n in models if n.startswith("libCacheSim")]
    return names[0] if names else None
