#include "device/device.h"

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

int ferry__device_open(const char *name, const struct ferry__device_params *p,
		       struct ferry__device **out)
{
	if (!strcmp(name, "auto")) {
		int rc = ferry__device_cuda.open(p, out);
		/* No GPU means the host device; a GPU number that does not exist is a
		 * mistake to report, not a reason to run on the host unnoticed. */
		if (rc == 0 || rc == -FERRY_ECONFIG)
			return rc;
		return ferry__device_host.open(p, out);
	}
	const struct ferry__device_ops *ops = ferry__device_find(name);
	if (!ops)
		return ferry__fail(-FERRY_ECONFIG, "device '%s': expected auto, cuda or host", name);
	return ops->open(p, out);
}
