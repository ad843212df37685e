/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Disks and partitions: what users type (-d sda, -d /dev/loop0, -d 7:0, -d sda1)
 * mapped to dev_t and names through sysfs, and back.
 */
#ifndef IOSPAN_DISKS_H
#define IOSPAN_DISKS_H

#include <stdbool.h>
#include <stddef.h>

#define DISK_NAME_LEN 64

struct disk {
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
	bool partition;
	/* The whole disk holding a partition; the disk itself otherwise. */
	unsigned int disk_major, disk_minor;
	char disk_name[DISK_NAME_LEN];
	/* First sector of a partition on its disk (0 for a disk): bios are remapped by it. */
	unsigned long long start_sector;
};

/* A disk named by the user, before it is looked up. */
struct disk_spec {
	bool by_devnum;
	unsigned int major, minor;
	char name[DISK_NAME_LEN];
};

/* For tests: read sysfs below @root instead of /sys. */
void disks_set_sysfs_root(const char *root);

/* "sda", "/dev/sda", "/dev/disk/by-id/..." (followed), "8:0". -EINVAL if malformed. */
int disk_spec_parse(const char *text, struct disk_spec *spec);
bool disk_spec_matches(const struct disk_spec *spec, unsigned int major, unsigned int minor,
		       const char *name);
/*
 * A -d of the commands that read /proc/diskstats (stat, watch): @arg parsed into
 * @specs[*nr], and kept as given in @texts[*nr], unless @max are there already. 0, or
 * -EINVAL with the usage error said (after @where: a config file's line, or "").
 */
int disk_spec_add(const char *where, const char *arg, struct disk_spec *specs, const char **texts,
		  int *nr, int max);

/* Live lookups through sysfs: -ENOENT if there is no such block device. */
int disk_lookup(const char *text, struct disk *disk);
int disk_from_name(const char *name, struct disk *disk);
int disk_from_devnum(unsigned int major, unsigned int minor, struct disk *disk);

/* Whether MAJ:MIN is a partition, from sysfs (false if unknown). */
bool disk_is_partition(unsigned int major, unsigned int minor);

/* Name of a device for output, or "MAJ:MIN" if it has none (any more). */
const char *disk_name_of(unsigned int major, unsigned int minor, char *buf, size_t len);

#endif
