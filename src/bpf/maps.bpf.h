/* SPDX-License-Identifier: GPL-2.0 */
/* Map helpers every program uses (as libbpf-tools' maps.bpf.h). */
#ifndef IOSPAN_MAPS_BPF_H
#define IOSPAN_MAPS_BPF_H

/*
 * A map of @type named @name, @nr entries of @key_type to @value_type (as bcc's
 * BPF_HASH() and friends, for libbpf's BTF-defined maps). User space may resize it.
 */
#define DEFINE_MAP_FLAGS(name, type_, key_type, value_type, nr, flags) \
	struct {                                                       \
		__uint(type, type_);                                   \
		__uint(map_flags, flags);                              \
		__uint(max_entries, nr);                               \
		__type(key, key_type);                                 \
		__type(value, value_type);                             \
	} name SEC(".maps")

#define DEFINE_MAP(name, type_, key_type, value_type, nr) \
	DEFINE_MAP_FLAGS(name, type_, key_type, value_type, nr, 0)

/* Per-task storage @name of @value_type: lives and dies with each task. */
#define DEFINE_TASK_STORAGE(name, value_type)            \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE); \
		__uint(map_flags, BPF_F_NO_PREALLOC);    \
		__type(key, int);                        \
		__type(value, value_type);               \
	} name SEC(".maps")

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
