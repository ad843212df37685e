// SPDX-License-Identifier: GPL-2.0
/* iospan lat --by stack: a request's kind from the functions of its queuing stack. */
#include "collect/lat.h" /* before cmocka: its fail() macro */
#include "testutil.h"

#define KIND(kind, ...)                                               \
	({                                                            \
		const char *const f_[] = {__VA_ARGS__};               \
		lat_stack_kind(kind, f_, sizeof(f_) / sizeof(f_[0])); \
	})

#define RA    BLK_OWN_READAHEAD
#define ASYNC (BLK_OWN_READAHEAD | LAT_KIND_RA_ASYNC)

/* The readahead code every readahead request is queued from (6.18, innermost first). */
#define RA_CODE "submit_bio_noacct_nocheck", "ext4_mpage_readpages", "read_pages"

static void test_read_miss(void **state)
{
	/* RocksDB's pread on a file it advised FADV_RANDOM (db_bench readrandom). */
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_unbounded", "force_page_cache_ra",
				 "filemap_get_pages", "filemap_read", "vfs_read",
				 "__x64_sys_pread64", "do_syscall_64"),
			    "read");
	/* The tail calls hide page_cache_sync_ra() and page_cache_async_ra(): the flag. */
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "filemap_get_pages",
				 "filemap_read", "vfs_read", "ksys_read"),
			    "read");
	assert_string_equal(KIND(ASYNC, RA_CODE, "page_cache_ra_order", "filemap_get_pages",
				 "filemap_read", "vfs_read", "ksys_read"),
			    "readahead");
	/* Where the kernel keeps the frame, the frame says it. */
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "page_cache_async_ra",
				 "filemap_get_pages.isra.0", "filemap_read"),
			    "readahead");
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "filemap_readahead.isra.0",
				 "filemap_get_pages", "filemap_read"),
			    "readahead");
	assert_string_equal(KIND(RA, RA_CODE, "filemap_splice_read", "splice_file_to_pipe"),
			    "read");
}

static void test_advice(void **state)
{
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_unbounded", "force_page_cache_ra",
				 "generic_fadvise", "ksys_readahead", "do_syscall_64"),
			    "readahead(2)");
	assert_string_equal(KIND(RA, RA_CODE, "force_page_cache_ra", "generic_fadvise",
				 "vfs_fadvise", "__x64_sys_readahead"),
			    "readahead(2)");
	assert_string_equal(KIND(RA, RA_CODE, "force_page_cache_ra", "generic_fadvise",
				 "ksys_fadvise64_64", "__x64_sys_fadvise64"),
			    "fadvise");
	assert_string_equal(KIND(RA, RA_CODE, "force_page_cache_ra", "generic_fadvise",
				 "vfs_fadvise", "madvise_willneed", "madvise_vma_behavior",
				 "do_madvise", "__x64_sys_madvise"),
			    "madvise");
	/* The stack cut before the syscall: the advice is all it shows. */
	assert_string_equal(KIND(RA, RA_CODE, "force_page_cache_ra", "generic_fadvise"), "fadvise");
	/* A flag left by an earlier read of the file does not change advice. */
	assert_string_equal(
		KIND(ASYNC, RA_CODE, "force_page_cache_ra", "generic_fadvise", "ksys_readahead"),
		"readahead(2)");
}

static void test_fault(void **state)
{
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "filemap_fault", "__do_fault",
				 "do_fault", "handle_mm_fault"),
			    "fault");
	assert_string_equal(
		KIND(ASYNC, RA_CODE, "page_cache_ra_order", "filemap_fault", "__do_fault"),
		"readahead");
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "do_async_mmap_readahead",
				 "filemap_fault"),
			    "readahead");
	/* A fault inside a read (its buffer is a file mapping): the fault, nearest. */
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_order", "filemap_fault", "__do_fault",
				 "handle_mm_fault", "exc_page_fault", "asm_exc_page_fault",
				 "copy_page_to_iter", "filemap_read", "vfs_read"),
			    "fault");
}

static void test_other(void **state)
{
	/* No entry on the stack (or no stack): what the block layer says. */
	assert_string_equal(KIND(RA, RA_CODE, "page_cache_ra_unbounded"), "readahead");
	assert_string_equal(lat_stack_kind(RA, NULL, 0), "readahead");
	assert_string_equal(KIND(RA, RA_CODE, NULL, "filemap_read"), "read");
	/* Other kinds keep their names, whatever the stack. */
	assert_string_equal(KIND(BLK_OWN_DIRECT, "iomap_dio_rw", "filemap_read"), "direct");
	assert_string_equal(KIND(BLK_OWN_BUFFERED, "ext4_writepages", "filemap_read"), "buffered");
	assert_string_equal(lat_stack_kind(BLK_OWN_META, NULL, 0), "meta");
	/* Names are whole: a longer one is another function. */
	assert_string_equal(KIND(RA, RA_CODE, "filemap_readahead_helper"), "readahead");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_miss),
		cmocka_unit_test(test_advice),
		cmocka_unit_test(test_fault),
		cmocka_unit_test(test_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
