/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers for the cmocka unit tests. */
#ifndef IOSPAN_TESTUTIL_H
#define IOSPAN_TESTUTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Like assert_float_equal, in double precision and naming the expression. */
#define assert_near(actual, expected, eps)                                                         \
	do {                                                                                       \
		double a__ = (actual), e__ = (expected);                                           \
		if (!(fabs(a__ - e__) <= (eps))) {                                                 \
			print_error("%s = %.6f, expected %.6f\n", #actual, a__, e__);              \
			fail();                                                                    \
		}                                                                                  \
	} while (0)

#endif
