// SPDX-License-Identifier: MIT
/* Sanitizer defaults every fuzz target is built with, so a run by hand
 * behaves as tests/fuzz/run.sh's: stop at the first report, with a stack,
 * and the accepted reports of ubsan.supp skipped.  The environment's
 * UBSAN_OPTIONS / ASAN_OPTIONS still override these. */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1:suppressions=" XKV_FUZZ_UBSAN_SUPP;
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=1:abort_on_error=1";
}
