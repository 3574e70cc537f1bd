<?php
// SPDX-License-Identifier: MIT
// php-memcached (libmemcached) against a server, text and binary protocol:
// setMulti, getMulti, set, get, delete; every value checked.
// tests/e2e/tcppipe.sh.   php phpclient.php HOST PORT text|binary ROUNDS
[$_, $host, $port, $proto, $rounds] = $argv + [4 => 5];
$m = new Memcached();
$m->setOption(Memcached::OPT_BINARY_PROTOCOL, $proto === 'binary');
$m->setOption(Memcached::OPT_COMPRESSION, false);
$m->addServer($host, (int)$port);
for ($r = 0; $r < (int)$rounds; $r++) {
	$vals = [];
	for ($i = 0; $i < 10; $i++)
		$vals["h$proto$r-$i"] = str_repeat("p$r$i", 1 + $i % 3);
	$ok = $m->setMulti($vals) && $m->getMulti(array_keys($vals)) == $vals;
	$ok = $ok && $m->set("one$proto$r", "single") && $m->get("one$proto$r") === "single";
	foreach (array_slice(array_keys($vals), 0, 5) as $k)
		$ok = $ok && $m->delete($k);
	$ok = $ok && $m->getMulti(array_keys($vals)) == array_slice($vals, 5, null, true);
	$ok = $ok && $m->get("missing$proto$r") === false && $m->getResultCode() == Memcached::RES_NOTFOUND;
	if (!$ok) {
		echo "php-memcached $proto: round $r: a wrong value (" . $m->getResultMessage() . ")\n";
		exit(1);
	}
}
echo "php-memcached $proto: $rounds rounds, every value right\n";
