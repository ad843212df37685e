/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Growable arrays, grown one way everywhere: doubled when full (from a first size),
 * the array and its capacity left as they were when memory runs out.
 */
#ifndef IOSPAN_ARRAY_H
#define IOSPAN_ARRAY_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The number of elements of array @a (an array, not a pointer). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The element of table @tab (a pointer to its first; the table ends with a NULL .name)
 * whose .name is the string @key, or NULL: command tables, option tables.
 */
#define TABLE_FIND(tab, key)                                  \
	({                                                    \
		__typeof__(&(tab)[0]) e__ = (tab);            \
		while (e__->name && strcmp(e__->name, (key))) \
			e__++;                                \
		e__->name ? e__ : NULL;                       \
	})

/*
 * Makes room for element @nr of the array @v (a typed pointer lvalue, realloc()ed) of
 * @cap (a size_t lvalue) elements: twice as many, or @first, when @nr reaches @cap.
 * 0, or -ENOMEM with @v and @cap unchanged.
 */
#define ARRAY_RESERVE(v, nr, cap, first)                                                    \
	({                                                                                  \
		int err__ = 0;                                                              \
		if ((nr) >= (cap)) {                                                        \
			size_t n__ = (first);                                               \
			__typeof__(v) p__;                                                  \
                                                                                            \
			if (cap) /* 0: the byte count would overflow */                     \
				n__ = (cap) <= SIZE_MAX / 2 / sizeof(*(v)) ? 2 * (cap) : 0; \
			p__ = n__ ? realloc((v), n__ * sizeof(*(v))) : NULL;                \
			if (p__) {                                                          \
				(v) = p__;                                                  \
				(cap) = n__;                                                \
			} else {                                                            \
				err__ = -ENOMEM;                                            \
			}                                                                   \
		}                                                                           \
		err__;                                                                      \
	})

#endif
