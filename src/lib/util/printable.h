/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names that come from the kernel (file paths, thread names, cgroup and device names)
 * are chosen by whoever created the file or thread: any local user. In text output
 * they pass through printable() first, so a name cannot move the cursor, clear the
 * screen or start a fake line. Escapes, in the style of `ls -b`:
 *
 *   \\        a backslash
 *   \n \t \r  newline, tab, carriage return
 *   \xHH      any other control byte (ESC is \x1b, DEL \x7f), each byte of a C1 control
 *             (U+0080-U+009F), of a bidirectional-text or line-separator control
 *             (U+061C, U+200E-U+200F, U+2028-U+202E, U+2066-U+2069), and each byte that
 *             is not part of valid UTF-8
 *
 * Everything else, including non-ASCII letters in valid UTF-8, is kept as it is.
 * JSON output carries the names themselves (json.c makes them valid UTF-8; its
 * utf8_seq_len() tells the characters apart here too).
 */
#ifndef IOSPAN_PRINTABLE_H
#define IOSPAN_PRINTABLE_H

#include <stddef.h>

/*
 * @s escaped as above into @buf (@len bytes, always NUL-terminated; when it does not
 * fit, cut between two characters or escapes, never inside one). Returns @buf.
 */
char *printable_buf(const char *s, char *buf, size_t len);

/*
 * printable_buf() into one of PRINTABLE_SLOTS static buffers in turn, large enough for
 * any path: for printf() arguments. Valid until PRINTABLE_SLOTS more calls.
 */
#define PRINTABLE_SLOTS 8
const char *printable(const char *s);

#endif
