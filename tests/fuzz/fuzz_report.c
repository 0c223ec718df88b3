/*
 * fuzz_report.c - libFuzzer harness for the report JSON parser
 * (report/report_parse.c: rp_run_parse), built by run.sh.  A parsed run is
 * also planned into figures and written as the HTML page to /dev/null, so
 * every value the parser lets through meets the code that formats it.
 * Checks: no crash, no sanitizer report, every refusal carries a message
 * naming the input, and nothing leaks (rp_run_free on every path).
 * Drawing (cairo) is left out: at about 40 executions a second it would
 * starve the parser, and fontconfig's process-wide caches read as leaks;
 * tests/cli/test_report.sh draws the figures of real runs.
 */
#include "report_internal.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rp_run run;
	memset(&run, 0, sizeof run);
	kvs_clear_error();
	kvs_status st = rp_run_parse((const char *)data, size, "fuzz.json", &run);
	if (st != KVS_OK) {
		kvs_require(strstr(kvs_last_error(), "fuzz.json") != NULL);
	} else {
		rp_fig *figs = NULL;
		size_t nfigs = 0;
		if (rp_figures_plan(&run, &figs, &nfigs) == KVS_OK)
			(void)rp_html_write("/dev/null", "fuzz", &run, 1, figs, nfigs, 960, 540,
					    false);
		kvs_free(figs);
	}
	rp_run_free(&run);
	return 0;
}
