#include "device/device.h"

#include <stdlib.h>
#include <string.h>

#include "base/base.h"

const struct ferry__device_ops *ferry__device_find(const char *name)
{
	if (!strcmp(name, "host"))
		return &ferry__device_host;
	if (!strcmp(name, "cuda"))
		return &ferry__device_cuda;
	return NULL;
}

/* FERRY_GPU wins; LOCAL_RANK (set by torchrun and MPI launchers) comes next. */
static int gpu_ordinal_from_env(unsigned long *ordinal)
{
	if (getenv("FERRY_GPU") && *getenv("FERRY_GPU"))
		return ferry__env_uint("FERRY_GPU", 0, 1023, 0, ordinal);
	return ferry__env_uint("LOCAL_RANK", 0, 1023, 0, ordinal);
}

int ferry__device_open(const char *name, int ordinal, struct ferry__device **out)
{
	unsigned long gpu = ordinal >= 0 ? (unsigned long)ordinal : 0;
	if (ordinal < 0) {
		int rc = gpu_ordinal_from_env(&gpu);
		if (rc < 0)
			return rc;
	}
	if (!name || !*name)
		name = getenv("FERRY_DEVICE");
	if (!name || !*name || !strcmp(name, "auto")) {
		int rc = ferry__device_cuda.open((int)gpu, out);
		/* No GPU means the host device; a GPU number that does not exist is a
		 * mistake to report, not a reason to run on the host unnoticed. */
		if (rc == 0 || rc == -FERRY_ECONFIG)
			return rc;
		return ferry__device_host.open(0, out);
	}
	const struct ferry__device_ops *ops = ferry__device_find(name);
	if (!ops)
		return ferry__fail(-FERRY_ECONFIG, "device '%s': expected auto, cuda or host", name);
	return ops->open((int)gpu, out);
}

int ferry__device_open_env(struct ferry__device **out)
{
	return ferry__device_open(NULL, -1, out);
}
