# SPDX-License-Identifier: MIT
# Ruby Dalli (Debian's ruby-dalli: the binary protocol) against a server:
# set_multi through `multi` (setq ..., noop), get_multi (getkq ..., noop),
# single set, get, delete; every value checked.  tests/e2e/tcppipe.sh.
#   ruby dalliclient.rb HOST:PORT ROUNDS
require 'dalli'

server, rounds = ARGV[0], (ARGV[1] || '5').to_i
dc = Dalli::Client.new(server, compress: false, raw: true, socket_timeout: 5)
ok = true
rounds.times do |r|
  vals = (0...12).map { |i| ["d#{r}-#{i}", "val#{r}-#{i}" * (1 + i % 4)] }.to_h
  dc.multi { vals.each { |k, v| dc.set(k, v) } }
  ok &&= dc.get_multi(*vals.keys) == vals
  dc.set("one#{r}", "single")
  ok &&= dc.get("one#{r}") == "single"
  vals.keys.first(6).each { |k| dc.delete(k) }
  ok &&= dc.get_multi(*vals.keys) == vals.to_a.drop(6).to_h
  ok &&= dc.get("missing-#{r}").nil?
  unless ok
    puts "dalli: round #{r}: a wrong value"
    exit 1
  end
end
puts "dalli #{Dalli::VERSION}: #{rounds} rounds, every value right"
