// SPDX-License-Identifier: GPL-2.0
/* Driver statuses in words: the codes QEMU's NVMe and SCSI disks answer a failed read with. */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "drvstatus.h"

static void test_nvme(void **state)
{
	struct drv_status st = {.kind = DRV_NVME};
	char b[128];

	assert_string_equal(drv_status_text(&st, b, sizeof(b)), "ok");
	/* What the guest's kernel logged for blkdebug's EIO: "sct 0x2 / sc 0x81". */
	st.status = 0x281;
	assert_string_equal(drv_status_text(&st, b, sizeof(b)),
			    "unrecovered read error (sct 0x2 sc 0x81)");
	st.status = 0x4000 | 0x371;
	assert_string_equal(drv_status_text(&st, b, sizeof(b)),
			    "aborted by host (sct 0x3 sc 0x71, dnr)");
	st.status = 0x2000 | 0x4000 | 0x0ee;
	assert_string_equal(drv_status_text(&st, b, sizeof(b)),
			    "status (sct 0x0 sc 0xee, more, dnr)");
	assert_string_equal(drv_kind_name(DRV_NVME), "nvme");
	assert_null(drv_kind_name(DRV_NONE));
	assert_null(drv_kind_name(99));
}

static void test_scsi(void **state)
{
	/* The failed read's sense as the guest's kernel logged it: aborted command 0x00/0x06. */
	struct drv_status st = {.kind = DRV_SCSI, .status = 0x02, .sense_key = 0xb, .ascq = 6};
	char b[128];

	assert_string_equal(drv_status_text(&st, b, sizeof(b)),
			    "check condition: aborted command (asc 0x00 ascq 0x06)");
	st = (struct drv_status){.kind = DRV_SCSI, .status = 3 << 16};
	assert_string_equal(drv_status_text(&st, b, sizeof(b)), "host DID_TIME_OUT");
	st.status = (0x42 << 16) | 0x08;
	assert_string_equal(drv_status_text(&st, b, sizeof(b)), "host 0x42, status busy");
	st.status = 0x7e;
	assert_string_equal(drv_status_text(&st, b, sizeof(b)), "status 0x7e");
	/* Truncated, still a string. */
	st.status = 0x02;
	assert_string_equal(drv_status_text(&st, b, 6), "check");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvme),
		cmocka_unit_test(test_scsi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
