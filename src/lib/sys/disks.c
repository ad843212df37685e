// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "disks.h"
#include "err.h"

static const char *sysfs_root = "/sys";

/*
 * Names by device number, kept a second: trace names the disk of every bio it prints,
 * and finding one in sysfs takes five system calls. A device number that is given to
 * another disk (a loop device set up again) shows its new name within the second.
 */
#define NAME_CACHE_SLOTS 64
#define NAME_CACHE_NS 1000000000ULL

struct name_cache_slot {
	unsigned int major, minor;
	uint64_t at; /* CLOCK_MONOTONIC ns of the lookup; 0: empty */
	char name[DISK_NAME_LEN];
};

/* Per thread: no lock, and a thread's names are its own. */
static __thread struct name_cache_slot name_cache[NAME_CACHE_SLOTS];
static unsigned int name_cache_gen;
static __thread unsigned int name_cache_seen;

void disks_set_sysfs_root(const char *root)
{
	sysfs_root = root ? root : "/sys";
	name_cache_gen++;
}

static int read_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		ret = -EIO;
	else
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return ret;
}

static int parse_devnum(const char *s, unsigned int *major, unsigned int *minor)
{
	char tail;

	if (sscanf(s, "%u:%u%c", major, minor, &tail) != 2)
		return -EINVAL;
	return 0;
}

int disk_spec_parse(const char *text, struct disk_spec *spec)
{
	struct stat st;
	const char *base;
	size_t i;

	memset(spec, 0, sizeof(*spec));
	if (!text || !*text)
		return -EINVAL;
	if (!parse_devnum(text, &spec->major, &spec->minor)) {
		spec->by_devnum = true;
		return 0;
	}
	if (text[0] == '/') {
		/* A device node (or a symlink to one) on this machine. */
		if (!stat(text, &st)) {
			if (!S_ISBLK(st.st_mode))
				return -ENOTBLK;
			spec->by_devnum = true;
			spec->major = major(st.st_rdev);
			spec->minor = minor(st.st_rdev);
			return 0;
		}
		/* Not here: keep the name, e.g. to match a recording from another machine. */
		if (strncmp(text, "/dev/", 5))
			return -ENOENT;
		base = text + 5;
	} else {
		base = text;
	}
	if (strlen(base) >= DISK_NAME_LEN)
		return -EINVAL;
	/* sysfs spells a '/' in a device name (cciss/c0d0) as '!'. */
	for (i = 0; base[i]; i++)
		spec->name[i] = base[i] == '/' ? '!' : base[i];
	spec->name[i] = '\0';
	if (!spec->name[0] || strchr(spec->name, ' '))
		return -EINVAL;
	return 0;
}

int disk_spec_add(const char *where, const char *arg, struct disk_spec *specs, const char **texts,
		  int *nr, int max)
{
	int err;

	if (*nr >= max)
		return fail_usage("%stoo many disks (at most %d)", where, max);
	err = disk_spec_parse(arg, &specs[*nr]);
	if (err == -ENOTBLK)
		return fail_usage("%s'%s' is not a block device", where, arg);
	if (err)
		return fail_usage("%sunknown disk '%s': name a device listed in /proc/diskstats "
				  "(sda, /dev/loop0, 7:0)",
				  where, arg);
	texts[(*nr)++] = arg;
	return 0;
}

bool disk_spec_matches(const struct disk_spec *spec, unsigned int major, unsigned int minor,
		       const char *name)
{
	if (spec->by_devnum)
		return spec->major == major && spec->minor == minor;
	return name && !strcmp(spec->name, name);
}

int disk_from_name(const char *name, struct disk *disk)
{
	char path[PATH_MAX], link[PATH_MAX], buf[64];
	char *slash, *parent;
	ssize_t n;
	int ret;

	if (!name[0] || strchr(name, '/') || strlen(name) >= DISK_NAME_LEN)
		return -ENOENT;
	memset(disk, 0, sizeof(*disk));
	snprintf(path, sizeof(path), "%s/class/block/%s/dev", sysfs_root, name);
	ret = read_sysfs_line(path, buf, sizeof(buf));
	if (ret)
		return -ENOENT;
	if (parse_devnum(buf, &disk->major, &disk->minor))
		return -EIO;
	snprintf(disk->name, sizeof(disk->name), "%s", name);
	snprintf(disk->disk_name, sizeof(disk->disk_name), "%s", name);
	disk->disk_major = disk->major;
	disk->disk_minor = disk->minor;

	snprintf(path, sizeof(path), "%s/class/block/%s/partition", sysfs_root, name);
	if (access(path, F_OK))
		return 0;
	disk->partition = true;
	snprintf(path, sizeof(path), "%s/class/block/%s/start", sysfs_root, name);
	if (!read_sysfs_line(path, buf, sizeof(buf)))
		disk->start_sector = strtoull(buf, NULL, 10);

	/* A partition's sysfs directory sits inside its disk's: .../sda/sda1. */
	snprintf(path, sizeof(path), "%s/class/block/%s", sysfs_root, name);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	slash = strrchr(link, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	parent = strrchr(link, '/');
	parent = parent ? parent + 1 : link;
	if (strlen(parent) >= DISK_NAME_LEN)
		return 0;
	snprintf(path, sizeof(path), "%s/class/block/%.63s/dev", sysfs_root, parent);
	if (read_sysfs_line(path, buf, sizeof(buf)) ||
	    parse_devnum(buf, &disk->disk_major, &disk->disk_minor))
		return 0;
	snprintf(disk->disk_name, sizeof(disk->disk_name), "%.63s", parent);
	return 0;
}

int disk_from_devnum(unsigned int major, unsigned int minor, struct disk *disk)
{
	char path[PATH_MAX], link[PATH_MAX];
	const char *name;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/dev/block/%u:%u", sysfs_root, major, minor);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -ENOENT;
	link[n] = '\0';
	name = strrchr(link, '/');
	name = name ? name + 1 : link;
	return disk_from_name(name, disk);
}

int disk_lookup(const char *text, struct disk *disk)
{
	struct disk_spec spec;
	int ret;

	ret = disk_spec_parse(text, &spec);
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	if (spec.by_devnum)
		return disk_from_devnum(spec.major, spec.minor, disk);
	return disk_from_name(spec.name, disk);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

const char *disk_name_of(unsigned int major, unsigned int minor, char *buf, size_t len)
{
	struct name_cache_slot *slot = &name_cache[(major * 31 + minor) % NAME_CACHE_SLOTS];
	uint64_t now = mono_ns();
	struct disk disk;

	if (name_cache_seen != name_cache_gen) { /* another sysfs root: forget all */
		memset(name_cache, 0, sizeof(name_cache));
		name_cache_seen = name_cache_gen;
	}
	if (slot->at && slot->major == major && slot->minor == minor &&
	    now - slot->at < NAME_CACHE_NS) {
		snprintf(buf, len, "%s", slot->name);
		return buf;
	}
	if (!disk_from_devnum(major, minor, &disk))
		snprintf(slot->name, sizeof(slot->name), "%s", disk.name);
	else
		snprintf(slot->name, sizeof(slot->name), "%u:%u", major, minor);
	slot->major = major;
	slot->minor = minor;
	slot->at = now ? now : 1;
	snprintf(buf, len, "%s", slot->name);
	return buf;
}

bool disk_is_partition(unsigned int major, unsigned int minor)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/dev/block/%u:%u/partition", sysfs_root, major, minor);
	return access(path, F_OK) == 0;
}
