// SPDX-License-Identifier: GPL-2.0
/*
 * The report page: web/report.html with its marks (<!--@name@-->) replaced by the
 * files they name and by the data. Nothing of the page is fetched when it opens: the
 * styles, the scripts and the data are in the file. The data goes into a
 * <script type="application/json"> element, which the page parses as JSON (never runs):
 * every '<', '>' and '&' in it is written as a \u escape, so no name from the kernel or a
 * user can end that element or start another, and JSON.parse gives the names back whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "err.h"
#include "json.h"
#include "outfile.h"
#include "report.h"

#define ASSET_DECL(name) extern const char report_##name##_start[], report_##name##_end[]
ASSET_DECL(html);
ASSET_DECL(css);
ASSET_DECL(js);
ASSET_DECL(uplot_css);
ASSET_DECL(uplot_js);

static const struct {
	const char *mark;
	const char *start, *end;
} assets[] = {
	{"report.css", report_css_start, report_css_end},
	{"report.js", report_js_start, report_js_end},
	{"uplot.css", report_uplot_css_start, report_uplot_css_end},
	{"uplot.js", report_uplot_js_start, report_uplot_js_end},
};

/* The data, with the characters HTML gives a meaning escaped (valid JSON still). */
static void write_data(FILE *out, const char *data, size_t len)
{
	size_t i, from = 0;

	for (i = 0; i < len; i++) {
		if (data[i] != '<' && data[i] != '>' && data[i] != '&')
			continue;
		fwrite(data + from, 1, i - from, out);
		fprintf(out, "\\u%04x", (unsigned char)data[i]);
		from = i + 1;
	}
	fwrite(data + from, 1, len - from, out);
}

/* The template with its marks replaced; an unknown mark is a build defect (-EINVAL). */
static int write_page(FILE *out, const char *data, size_t len)
{
	const char *p = report_html_start, *end = report_html_end, *m, *e;
	size_t i;

	while (p < end) {
		m = memmem(p, end - p, "<!--@", 5);
		if (!m) {
			fwrite(p, 1, end - p, out);
			break;
		}
		fwrite(p, 1, m - p, out);
		e = memmem(m, end - m, "@-->", 4);
		if (!e)
			return -EINVAL;
		m += 5;
		if ((size_t)(e - m) == 4 && !memcmp(m, "data", 4)) {
			write_data(out, data, len);
		} else {
			for (i = 0; i < ARRAY_SIZE(assets); i++)
				if (strlen(assets[i].mark) == (size_t)(e - m) &&
				    !memcmp(m, assets[i].mark, e - m))
					break;
			if (i == ARRAY_SIZE(assets))
				return -EINVAL;
			fwrite(assets[i].start, 1, assets[i].end - assets[i].start, out);
		}
		p = e + 4;
	}
	return 0;
}

int report_page_write(const char *path, int (*fill)(struct jw *jw, const void *arg),
		      const void *arg)
{
	struct outfile *of = NULL;
	char *data = NULL;
	size_t len = 0;
	struct jw *jw = NULL;
	FILE *mem;
	int ret, err;

	mem = open_memstream(&data, &len);
	if (!mem)
		return fail(-ENOMEM, "out of memory");
	jw = jw_new(mem);
	ret = jw ? fill(jw, arg) : fail(-ENOMEM, "out of memory");
	jw_free(jw);
	if (fclose(mem) && !ret)
		ret = fail(-ENOMEM, "out of memory");
	if (ret)
		goto cleanup;
	ret = outfile_open(&of, path, true);
	if (ret) {
		ret = fail(ret, "cannot write '%s': %s", path, strerror(-ret));
		goto cleanup;
	}
	ret = write_page(outfile_stream(of), data, len);
	if (ret)
		fail(ret, "the report's template names a file it does not have (a build defect)");
	err = outfile_error(of);
	err = outfile_close(of, !ret && !err) ?: err;
	if (err && !ret)
		ret = fail(err, "cannot write '%s': %s", path, strerror(-err));
cleanup:
	free(data);
	return ret;
}
