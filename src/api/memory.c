/* The public device-memory calls: allocation and synchronous copies on a
 * context's device (host memory on the host device). */
#include "context/context.h"

int ferry_device_alloc(ferry_ctx *ctx, size_t len, void **out)
{
	return ctx->ld.dev->ops->mem_alloc(ctx->ld.dev, len ? len : 1, out);
}

void ferry_device_free(ferry_ctx *ctx, void *ptr)
{
	if (ptr)
		ctx->ld.dev->ops->mem_free(ctx->ld.dev, ptr);
}

int ferry_copy_to_host(ferry_ctx *ctx, void *host, const void *device, size_t len)
{
	return len ? ctx->ld.dev->ops->copy_sync(ctx->ld.dev, host, device, len, FERRY__D2H) : 0;
}

int ferry_copy_to_device(ferry_ctx *ctx, void *device, const void *host, size_t len)
{
	return len ? ctx->ld.dev->ops->copy_sync(ctx->ld.dev, device, host, len, FERRY__H2D) : 0;
}
