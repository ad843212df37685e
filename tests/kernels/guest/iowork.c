// SPDX-License-Identifier: GPL-2.0
/*
 * iowork: a guest workload with exact, known I/O, for the kernel test matrix.
 * Built static (it runs in a busybox initramfs); prints what it did as one JSON line.
 *
 *   iowork pread|pwrite PATH [-b BS] [-n COUNT] [--direct] [--random] [--fsync]
 *   iowork mmap PATH        touches one byte of every page of PATH through a shared mapping
 *   iowork aio PATH [-b BS] [-n COUNT] [-q QD]
 *                           O_DIRECT reads through io_setup/io_submit/io_getevents, QD in
 *                           flight; the first QD in one io_submit, which plugs (from 3):
 *                           contiguous reads merge there into one request of several bios
 *   iowork pair PATH PATH2 --comm NAME --ready FILE --go FILE [-b BS] [-n COUNT]
 *                           two threads, the process's own named NAME and a second one
 *                           named NAME-t, each writes COUNT blocks of its file with
 *                           O_DIRECT, then reads them: once the process has written
 *                           "PID TID" (TID: the second thread's) to FILE and found the
 *                           file GO (so that filters can name it before it does I/O)
 *   iowork compat PATH [-b BS] [-n COUNT]
 *                           one pread of BS bytes of PATH (its only I/O), then COUNT
 *                           32-bit syscalls (int $0x80) lseek(fd, BS, SEEK_SET) with fd
 *                           also in rdi: ia32's lseek has the number of x86-64's readv,
 *                           so a tracer taking them for 64-bit calls sees COUNT reads of
 *                           BS bytes more; exit 3 where the kernel has no 32-bit syscalls
 *   iowork bpfmap PATH [-b BS] [-n COUNT]
 *                           COUNT lookups of a BS-byte value in a BPF array map (a bpf()
 *                           caller, as iospan is), or until PATH exists; ops: the lookups
 *
 * pread/pwrite do COUNT calls of BS bytes at offsets i * BS (a permutation of them with
 * --random: every block exactly once); --fsync ends a write with one fsync. Each call must
 * move exactly BS bytes, or iowork fails (exit 1, one line on stderr).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct opts {
	const char *mode;
	const char *path;
	const char *path2, *comm, *ready, *go; /* pair */
	size_t bs;
	long count;
	int qd;
	int direct;
	int random;
	int fsync;
};

struct result {
	long ops;
	long long bytes;
	long fsyncs;
	long pages;
};

static void die(const char *what, const char *path)
{
	fprintf(stderr, "iowork: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: iowork pread|pwrite|mmap|aio|bpfmap|compat PATH [-b BS] [-n COUNT] [-q QD] "
		"[--direct] [--random] [--fsync]\n"
		"       iowork pair PATH PATH2 --comm NAME --ready FILE --go FILE "
		"[-b BS] [-n COUNT]\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .bs = 65536, .count = 16, .qd = 4 };
	if (argc < 3)
		usage();
	o->mode = argv[1];
	o->path = argv[2];
	int i = 3;

	if (!strcmp(o->mode, "pair")) {
		if (argc < 4)
			usage();
		o->path2 = argv[i++];
	}
	for (; i < argc; i++) {
		const char *a = argv[i];
		int has_val = i + 1 < argc;

		if (!strcmp(a, "-b") && has_val)
			o->bs = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "-n") && has_val)
			o->count = strtol(argv[++i], NULL, 0);
		else if (!strcmp(a, "-q") && has_val)
			o->qd = atoi(argv[++i]);
		else if (!strcmp(a, "--direct"))
			o->direct = 1;
		else if (!strcmp(a, "--random"))
			o->random = 1;
		else if (!strcmp(a, "--fsync"))
			o->fsync = 1;
		else if (!strcmp(a, "--comm") && has_val)
			o->comm = argv[++i];
		else if (!strcmp(a, "--ready") && has_val)
			o->ready = argv[++i];
		else if (!strcmp(a, "--go") && has_val)
			o->go = argv[++i];
		else
			usage();
	}
	if (!o->bs || o->count <= 0 || o->qd <= 0)
		usage();
	if (!strcmp(o->mode, "pair") && (!o->comm || !o->ready || !o->go))
		usage();
}

/* The i-th block: i itself, or a fixed permutation of 0..n-1 (an LCG step modulo the
 * next power of two, skipping values >= n: full period, so each block exactly once). */
static long block_of(long i, long n, int random)
{
	static long state = -1, m;

	if (!random)
		return i;
	if (state < 0) {
		for (m = 1; m < n; m <<= 1)
			;
		state = 0;
	}
	do
		state = (state * 5 + 3) & (m - 1);
	while (state >= n);
	return state;
}

static void *io_buffer(size_t bs)
{
	void *buf;

	if (posix_memalign(&buf, 4096, bs))
		die("allocating", "buffer");
	memset(buf, 'i', bs);
	return buf;
}

static void sync_io(const struct opts *o, struct result *r)
{
	int write = !strcmp(o->mode, "pwrite");
	int flags = (write ? O_WRONLY | O_CREAT : O_RDONLY) | (o->direct ? O_DIRECT : 0);
	int fd = open(o->path, flags, 0644);
	char *buf = io_buffer(o->bs);

	if (fd < 0)
		die("opening", o->path);
	for (long i = 0; i < o->count; i++) {
		off_t off = (off_t)block_of(i, o->count, o->random) * o->bs;
		ssize_t n = write ? pwrite(fd, buf, o->bs, off) : pread(fd, buf, o->bs, off);

		if (n < 0)
			die(write ? "pwrite" : "pread", o->path);
		if (n != (ssize_t)o->bs) {
			fprintf(stderr, "iowork: %s %s: %zd bytes at %lld, not %zu\n",
				o->mode, o->path, n, (long long)off, o->bs);
			exit(1);
		}
		r->ops++;
		r->bytes += n;
	}
	if (o->fsync) {
		if (fsync(fd))
			die("fsync", o->path);
		r->fsyncs++;
	}
	close(fd);
	free(buf);
}

static void mmap_read(const struct opts *o, struct result *r)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = open(o->path, O_RDONLY);
	struct stat st;
	volatile unsigned char *map;
	unsigned long sum = 0;

	if (fd < 0 || fstat(fd, &st))
		die("opening", o->path);
	map = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap", o->path);
	for (off_t off = 0; off < st.st_size; off += page) {
		sum += map[off];
		r->pages++;
	}
	r->bytes = st.st_size;
	r->ops = r->pages;
	munmap((void *)map, st.st_size);
	close(fd);
	(void)sum;
}

static long sys_io_setup(unsigned nr, aio_context_t *ctx)
{
	return syscall(SYS_io_setup, nr, ctx);
}

static long sys_io_submit(aio_context_t ctx, long n, struct iocb **iocbs)
{
	return syscall(SYS_io_submit, ctx, n, iocbs);
}

static long sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *ev)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, NULL);
}

/* Keeps QD reads in flight: each completion frees its slot for the next block. */
static void aio_read(const struct opts *o, struct result *r)
{
	int fd = open(o->path, O_RDONLY | O_DIRECT);
	aio_context_t ctx = 0;
	struct iocb *cbs = calloc(o->qd, sizeof(*cbs)), **first = calloc(o->qd, sizeof(*first));
	char *bufs = io_buffer(o->bs * o->qd);
	struct io_event ev[64];
	long next = 0, inflight = 0;

	if (fd < 0)
		die("opening", o->path);
	if (!cbs || !first || sys_io_setup(o->qd, &ctx))
		die("io_setup", o->path);
	for (int s = 0; s < o->qd && next < o->count; s++, next++, inflight++) {
		struct iocb *cb = &cbs[s];

		*cb = (struct iocb){ .aio_lio_opcode = IOCB_CMD_PREAD, .aio_fildes = fd,
				     .aio_buf = (uintptr_t)(bufs + s * o->bs), .aio_nbytes = o->bs,
				     .aio_offset = (long long)next * o->bs, .aio_data = s };
		first[s] = cb;
	}
	if (inflight && sys_io_submit(ctx, inflight, first) != inflight)
		die("io_submit", o->path);
	free(first);
	while (inflight) {
		long n = sys_io_getevents(ctx, 1, inflight < 64 ? inflight : 64, ev);

		if (n < 0)
			die("io_getevents", o->path);
		for (long e = 0; e < n; e++) {
			struct iocb *cb = &cbs[ev[e].data];

			if (ev[e].res != (long long)o->bs) {
				errno = ev[e].res < 0 ? -ev[e].res : EIO;
				die("aio read", o->path);
			}
			r->ops++;
			r->bytes += ev[e].res;
			inflight--;
			if (next < o->count) {
				cb->aio_offset = (long long)next++ * o->bs;
				if (sys_io_submit(ctx, 1, &cb) != 1)
					die("io_submit", o->path);
				inflight++;
			}
		}
	}
	syscall(SYS_io_destroy, ctx);
	close(fd);
	free(bufs);
	free(cbs);
}

/* pair: what each thread does, and its tid. */
struct pair_thread {
	struct opts o;
	struct result r;
	pid_t tid;
	char name[16];
	pthread_barrier_t *ready;
};

/* Writes then reads its file with O_DIRECT, as pwrite and pread --direct do. */
static void pair_io(struct pair_thread *t)
{
	struct opts o = t->o;

	o.direct = 1;
	o.mode = "pwrite";
	sync_io(&o, &t->r);
	o.mode = "pread";
	sync_io(&o, &t->r);
}

static void *pair_second(void *arg)
{
	struct pair_thread *t = arg;

	t->tid = syscall(SYS_gettid);
	prctl(PR_SET_NAME, t->name);
	pthread_barrier_wait(t->ready); /* named, its tid known */
	pthread_barrier_wait(t->ready); /* go */
	pair_io(t);
	return NULL;
}

static void pair(const struct opts *o)
{
	struct pair_thread main_t = {.o = *o}, second = {.o = *o};
	pthread_barrier_t ready;
	pthread_t th;
	FILE *f;

	second.o.path = o->path2;
	snprintf(main_t.name, sizeof(main_t.name), "%s", o->comm);
	snprintf(second.name, sizeof(second.name), "%.13s-t", o->comm);
	prctl(PR_SET_NAME, main_t.name);
	pthread_barrier_init(&ready, NULL, 2);
	second.ready = &ready;
	if (pthread_create(&th, NULL, pair_second, &second))
		die("starting a thread for", o->path2);
	pthread_barrier_wait(&ready);
	/* Both files exist when it says ready: a filter by file names them before the go. */
	for (int i = 0; i < 2; i++) {
		const char *path = i ? o->path2 : o->path;
		int fd = open(path, O_WRONLY | O_CREAT, 0644);

		if (fd < 0 || close(fd))
			die("creating", path);
	}
	f = fopen(o->ready, "w");
	if (!f || fprintf(f, "%d %d\n", getpid(), second.tid) < 0 || fclose(f))
		die("writing", o->ready);
	/* Bounded: 120 s without the go file is a failure, not a hang. */
	for (int i = 0; access(o->go, F_OK); i++) {
		if (i == 12000) {
			errno = ETIMEDOUT;
			die("waiting for", o->go);
		}
		usleep(10000);
	}
	pthread_barrier_wait(&ready);
	pair_io(&main_t);
	pthread_join(th, NULL);
	printf("{\"tool\":\"iowork\",\"mode\":\"pair\",\"pid\":%d,\"tid\":%d,\"path\":\"%s\","
	       "\"path2\":\"%s\",\"bs\":%zu,\"count\":%ld,\"bytes\":%lld,\"bytes2\":%lld}\n",
	       getpid(), second.tid, o->path, o->path2, o->bs, o->count, main_t.r.bytes,
	       second.r.bytes);
}

/*
 * While a bpf() map lookup copies the value, the kernel keeps the kprobe and classic
 * tracepoint BPF programs of its CPU from running (bpf_prog_active): where that part
 * can be preempted (PREEMPT_RT), the tasks that run meanwhile on the CPU have their
 * programs' runs skipped. Looks up a BS-byte value in a loop, checking for PATH (the
 * end) every 256 lookups.
 */
static void bpf_lookups(const struct opts *o, struct result *r)
{
	char *value = io_buffer(o->bs);
	union bpf_attr attr;
	uint32_t key = 0;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(key);
	attr.value_size = o->bs;
	attr.max_entries = 1;
	fd = syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	if (fd < 0)
		die("creating a BPF map for", o->path);
	for (long i = 0; i < o->count; i++) {
		memset(&attr, 0, sizeof(attr));
		attr.map_fd = fd;
		attr.key = (uintptr_t)&key;
		attr.value = (uintptr_t)value;
		if (syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr)))
			die("looking up a BPF map for", o->path);
		r->ops++;
		if (!(i & 255) && !access(o->path, F_OK))
			break;
	}
	close(fd);
	free(value);
}

#if defined(__x86_64__)
/* ia32 syscall @nr with three arguments, @fd also in rdi (x86-64's first argument). */
static long int80(long nr, long fd, long a1, long a2)
{
	long ret = nr;

	asm volatile("int $0x80"
		     : "+a"(ret)
		     : "b"(fd), "c"(a1), "d"(a2), "D"(fd)
		     : "r8", "r9", "r10", "r11", "memory");
	return ret;
}

#define IA32_LSEEK  19
#define IA32_GETPID 20

/*
 * Whether int $0x80 works: without IA32 emulation (or with ia32_emulation=0) it is a
 * general protection fault, so a child tries it first.
 */
static bool have_int80(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		die("forking", "a probe of int $0x80");
	if (!pid)
		_exit(int80(IA32_GETPID, 0, 0, 0) == getpid() ? 0 : 1);
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
}

/* See the usage: 32-bit syscalls a 64-bit reading of the numbers would misname. */
static void compat_calls(const struct opts *o, struct result *r)
{
	int fd = open(o->path, O_RDONLY);
	char *buf = io_buffer(o->bs);

	if (fd < 0)
		die("opening", o->path);
	if (!have_int80()) {
		fprintf(stderr, "iowork: no 32-bit syscalls here\n");
		exit(3);
	}
	if (pread(fd, buf, o->bs, 0) != (ssize_t)o->bs)
		die("pread", o->path);
	r->bytes = o->bs;
	for (long i = 0; i < o->count; i++) {
		if (int80(IA32_LSEEK, fd, o->bs, SEEK_SET) != (long)o->bs)
			die("lseek (int $0x80)", o->path);
		r->ops++;
	}
	close(fd);
	free(buf);
}
#else
static void compat_calls(const struct opts *o, struct result *r)
{
	(void)o;
	(void)r;
	fprintf(stderr, "iowork: no 32-bit syscalls here\n");
	exit(3);
}
#endif

static void report(const struct opts *o, const struct result *r)
{
	printf("{\"tool\":\"iowork\",\"mode\":\"%s\",\"pid\":%d,\"path\":\"%s\",\"bs\":%zu,"
	       "\"count\":%ld,\"qd\":%d,\"direct\":%s,\"random\":%s,\"ops\":%ld,\"bytes\":%lld,"
	       "\"fsyncs\":%ld,\"pages\":%ld}\n",
	       o->mode, getpid(), o->path, o->bs, o->count, o->qd,
	       o->direct || !strcmp(o->mode, "aio") ? "true" : "false",
	       o->random ? "true" : "false", r->ops, r->bytes, r->fsyncs, r->pages);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct result r = { 0 };

	parse(argc, argv, &o);
	if (!strcmp(o.mode, "pread") || !strcmp(o.mode, "pwrite"))
		sync_io(&o, &r);
	else if (!strcmp(o.mode, "mmap"))
		mmap_read(&o, &r);
	else if (!strcmp(o.mode, "aio"))
		aio_read(&o, &r);
	else if (!strcmp(o.mode, "bpfmap"))
		bpf_lookups(&o, &r);
	else if (!strcmp(o.mode, "compat"))
		compat_calls(&o, &r);
	else if (!strcmp(o.mode, "pair")) {
		pair(&o);
		return 0;
	} else
		usage();
	report(&o, &r);
	return 0;
}
