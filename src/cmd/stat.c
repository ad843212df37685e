// SPDX-License-Identifier: GPL-2.0
#include "iospan.h"
#include "err.h"

int cmd_stat(int argc, char **argv)
{
	return fail_usage("stat: not implemented yet");
}
