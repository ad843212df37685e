/* SPDX-License-Identifier: GPL-2.0 */
/* What the files of trace's collector share: its API, the skeleton, the libraries. */
#ifndef IOSPAN_COLLECT_TRACE_PRIV_H
#define IOSPAN_COLLECT_TRACE_PRIV_H

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "args.h"
#include "bpfcmd.h"
#include "bpfmap.h"
#include "cgroups.h"
#include "disks.h"
#include "diskstats.h"
#include "err.h"
#include "filters.h"
#include "fspath.h"
#include "procinfo.h"
#include "hist.h"
#include "collect/trace.h"
#include "json.h"
#include "ksyms.h"
#include "mapmem.h"
#include "ops.h"
#include "printable.h"
#include "probe.h"
#include "rbuf.h"
#include "units.h"
#include "trace.skel.h"
#include "trace_compat.skel.h"
#include "skel.h"

#endif
