/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The report page's files (src/cmd/report/web), embedded as they are in the repository:
 * each between report_<name>_start and report_<name>_end (page.c).
 */
#define ASSET(name, path)               \
	.global report_##name##_start;  \
	.global report_##name##_end;    \
	report_##name##_start:          \
	.incbin path;                   \
	report_##name##_end:

	.section .rodata
ASSET(html, "src/cmd/report/web/report.html")
ASSET(css, "src/cmd/report/web/report.css")
ASSET(js, "src/cmd/report/web/report.js")
ASSET(uplot_css, "src/cmd/report/web/vendor/uplot-1.6.32/uPlot.min.css")
ASSET(uplot_js, "src/cmd/report/web/vendor/uplot-1.6.32/uPlot.iife.min.js")
	.section .note.GNU-stack, "", @progbits
