// SPDX-License-Identifier: MIT
// memjs (npm: a binary-protocol-only client) against one server, its own
// feature set, every value checked.
//
//   node binclient.js features HOST PORT [lossy]   get/set/add/replace/delete/
//       increment and decrement with an initial value/append/prepend/touch/
//       flush/stats/stats with a group, values up to 1 MiB
//   node binclient.js sasl HOST PORT USER PASSWORD authenticated: served;
//       a wrong password: refused
//
// lossy: the layout may lose an item (array_fnv, set_assoc): a miss where a
// hit was due is allowed, a wrong value never is.  NODE_PATH names the
// folder memjs is installed in (tests/lib/install-deps.sh: tests/.node).
// Prints PASS/FAIL lines; exit 1 on a FAIL.
'use strict';
const crypto = require('crypto');
const memjs = require('memjs');

let fails = 0;
function check(what, ok) {
  console.log((ok ? 'PASS ' : 'FAIL ') + what);
  if (!ok) fails++;
}
const quiet = { log: () => {} };

async function features(host, port, lossy) {
  const c = memjs.Client.create(`${host}:${port}`, { logger: quiet, retries: 0, timeout: 5 });
  const p = `mj${process.pid}-`;
  const str = (r) => (r.value === null ? null : r.value.toString('latin1'));
  const hit = (got, want) => got === want || (lossy && got === null);

  check('set', (await c.set(p + 'a', 'alpha', {})) === true);
  check('get', hit(str(await c.get(p + 'a')), 'alpha'));
  check('get miss: null', (await c.get(p + 'nope')).value === null);
  check('add over an item fails', (await c.add(p + 'a', 'x', {})) === false);
  check('add new', (await c.add(p + 'c', 'gamma', {})) === true);
  check('replace of a missing key: false', (await c.replace(p + 'nope', 'x', {})) === false);
  check('replace', (await c.replace(p + 'c', 'GAMMA', {})) === true);
  check('get after replace', hit(str(await c.get(p + 'c')), 'GAMMA'));
  check('append', (await c.append(p + 'c', '>>')) === true || lossy);
  check('prepend', (await c.prepend(p + 'c', '<<')) === true || lossy);
  // memjs 1.3.2's prepend sends append's opcode (0x0e): memcached appends
  check('append and "prepend" (an append) joined', hit(str(await c.get(p + 'c')), 'GAMMA>><<'));
  let threw = false;
  try { await c.append(p + 'nope', 'x'); } catch (e) { threw = true; }
  check('append to a missing key fails', threw);
  let r = await c.increment(p + 'n', 5, { initial: 100 });
  check('increment of a missing key: the initial value', r.success && r.value === 100);
  r = await c.increment(p + 'n', 5, { initial: 100 });
  check('increment', (r.success && r.value === 105) || lossy);
  r = await c.decrement(p + 'n', 1000, { initial: 0 });
  check('decrement stops at 0', (r.success && r.value === 0) || lossy);
  let err = '';
  try { await c.increment(p + 'c', 1, { initial: 0 }); } catch (e) { err = e.message; }
  check(`increment of a non-number fails (${err})`, /non-numeric/i.test(err) || lossy);
  check('touch', (await c.touch(p + 'a', 100)) === true || lossy);
  check('touch of a missing key: false', (await c.touch(p + 'nope', 100)) === false);
  check('delete', (await c.delete(p + 'a')) === true || lossy);
  check('delete again: false', (await c.delete(p + 'a')) === false);
  check('get after delete: null', (await c.get(p + 'a')).value === null);
  for (const n of [1, 1400, 4096, 65536, 300000, 1000000]) {
    const v = crypto.randomBytes(n);
    const ok = await c.set(p + 'big' + n, v, {});
    const got = (await c.get(p + 'big' + n)).value;
    check(`value of ${n} bytes round trips`, ok === true && ((got !== null && v.equals(got)) || (lossy && got === null)));
  }
  const st = await new Promise((res) => c.stats((err, server, stats) => res(stats)));
  check('stats: pid', st && 'pid' in st);
  check('flush', Object.values(await c.flush()).every((x) => x === true));
  check('get after flush: null', (await c.get(p + 'c')).value === null);
  c.close();
}

async function sasl(host, port, user, password) {
  const p = `ms${process.pid}-`;
  const c = memjs.Client.create(`${user}:${password}@${host}:${port}`, { logger: quiet, retries: 0, timeout: 5 });
  check('sasl: set once authenticated', (await c.set(p + 'k', 'v', {})) === true);
  check('sasl: get once authenticated', (await c.get(p + 'k')).value.toString() === 'v');
  c.close();
  const bad = memjs.Client.create(`${user}:${password}x@${host}:${port}`, { logger: quiet, retries: 0, timeout: 5 });
  let refused = false;
  try { await bad.get(p + 'k'); } catch (e) { refused = true; }
  check('sasl: a wrong password is refused', refused);
  bad.close();
}

(async () => {
  const [mode, host, port, a, b] = process.argv.slice(2);
  if (mode === 'features') await features(host, port, a === 'lossy');
  else if (mode === 'sasl') await sasl(host, port, a, b);
  else { console.error('usage: binclient.js features|sasl HOST PORT ...'); process.exit(2); }
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL ' + e.stack); process.exit(1); });
