/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way the exported metrics are written (metrics.c walks them once): families,
 * their samples and histograms, each value an exact decimal. Two writers take them,
 * the Prometheus text of GET /metrics (metrics.c) and OTLP's JSON metrics (otlp.c), so
 * that a scrape and a push cannot tell different things.
 */
#ifndef IOSPAN_EXPORT_MWRITER_H
#define IOSPAN_EXPORT_MWRITER_H

#include <stdint.h>

#include "prom.h" /* struct prom_label, enum prom_type: the model is Prometheus' */

/* A value: @n / 10^@scale, exactly (counts; times the kernel keeps in ms, us or ns). */
struct mw_num {
	uint64_t n;
	int scale; /* 0 to 9 */
};

#define MW_INT(v)	    ((struct mw_num){(v), 0})
#define MW_SCALED(v, scale) ((struct mw_num){(v), (scale)})
#define MW_MAX_BUCKETS	    64

struct mwriter;

struct mwriter_ops {
	/* A family: before its samples (a family may have none). */
	void (*family)(struct mwriter *w, const char *name, enum prom_type type, const char *help);
	/* A sample of the family (a counter or a gauge). */
	void (*sample)(struct mwriter *w, const struct prom_label *labels, int nr, struct mw_num v);
	/*
	 * A histogram of the family: @nr_le (at most MW_MAX_BUCKETS) upper bounds
	 * @le[i] / 10^@le_scale, ascending, with @cum[i] observations at most le[i]
	 * (cumulative, as Prometheus' le buckets); @count observations in all, summing to @sum.
	 */
	void (*histogram)(struct mwriter *w, const struct prom_label *labels, int nr,
			  const uint64_t *le, int le_scale, const uint64_t *cum, int nr_le,
			  struct mw_num sum, uint64_t count);
};

struct mwriter {
	const struct mwriter_ops *ops;
};

static inline void mw_family(struct mwriter *w, const char *name, enum prom_type type,
			     const char *help)
{
	w->ops->family(w, name, type, help);
}

static inline void mw_sample(struct mwriter *w, const struct prom_label *labels, int nr,
			     struct mw_num v)
{
	w->ops->sample(w, labels, nr, v);
}

/* 10^@scale, for the writers' doubles (@scale 0 to 9). */
static inline double mw_pow10(int scale)
{
	static const double p[] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

	return p[scale < 0 ? 0 : scale > 9 ? 9 : scale];
}

#endif
