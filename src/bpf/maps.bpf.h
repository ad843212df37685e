/* SPDX-License-Identifier: GPL-2.0 */
/* Map helpers every program uses (as libbpf-tools' maps.bpf.h). */
#ifndef IOSPAN_MAPS_BPF_H
#define IOSPAN_MAPS_BPF_H

/*
 * The value of @key in hash map @map, made from @init where there is none. *@err: 0 if
 * made here, -EEXIST if it was there (or another CPU made it meanwhile), else why it
 * could not be made (-E2BIG full, -ENOMEM, -EBUSY: a bucket held on this CPU). NULL if
 * there is none (with *@err 0 or -EEXIST: evicted at once from an LRU map).
 */
static __always_inline void *map_lookup_or_init(void *map, const void *key, const void *init,
						long *err)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v) {
		*err = -EEXIST;
		return v;
	}
	*err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

#endif
