// SPDX-License-Identifier: GPL-2.0
#include "iospan.h"
#include "err.h"

int cmd_doctor(int argc, char **argv)
{
	return fail_usage("doctor: not implemented yet");
}
