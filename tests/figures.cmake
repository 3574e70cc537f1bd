# docs/figures (docs/layouts*.md): bench/plot/plot_layouts.py redraws every figure
# from the data files checked in under docs/ into a fresh temporary folder;
# the test fails if one of the figures below is missing or empty (PNG and
# SVG), or if one of docs/layouts*.md shows a figure the script does not draw.
# No root; about 10 s of CPU (fourteen figures), longer on a busy machine.
#
#   ctest --test-dir build -R figures_smoke --output-on-failure

set(XKV_FIGURES memory_per_item lost_keys stale_reads fill_level microbench_threads hot_set
  array_fnv_slots lru_lock no_common_lru lru_percpu set_assoc keyed_placement hitratio_mrc_all
  hitratio_mrc_etc)
add_test(NAME figures_smoke
  COMMAND sh -c "t=$(mktemp -d) && trap 'rm -rf \"$t\"' EXIT && /usr/bin/python3 \"$0\" --out \"$t\" >/dev/null || exit 1; docs=\"$1\"; shift; for f in \"$@\"; do for e in png svg; do test -s \"$t/$f.$e\" || { echo \"figure $f.$e was not drawn\"; exit 1; }; done; done; for md in \"$docs\"/layouts*.md; do test -s \"$md\" || { echo \"no $md\"; exit 1; }; for f in $(grep -o 'figures/[a-z_]*\\.png' \"$md\" | sort -u); do test -s \"$t/$(basename \"$f\")\" || { echo \"$md shows $f, which bench/plot/plot_layouts.py does not draw\"; exit 1; }; done; done; echo figures ok"
          ${CMAKE_SOURCE_DIR}/bench/plot/plot_layouts.py ${CMAKE_SOURCE_DIR}/docs ${XKV_FIGURES})
set_tests_properties(figures_smoke PROPERTIES TIMEOUT 180 LABELS docs)

# xdpkv compare's figures (bench/compare/plots.py, headline.py), drawn again
# from the committed quick run (docs/compare-quick/results.json) and read back
# element by element (bench/compare/check_figures.py): no two texts overlap,
# no legend over a title or axis name, every text inside the figure, every
# annotation near its point, the headline's axis names the table's headings.
# No root; a few seconds.
add_test(NAME compare_figures
  COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/compare/check_figures.py
          ${CMAKE_SOURCE_DIR}/docs/compare-quick)
set_tests_properties(compare_figures PROPERTIES TIMEOUT 120 LABELS "docs;compare")
