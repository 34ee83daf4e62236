/*
 * FERRY_ODIRECT=auto: buffered reads or O_DIRECT, chosen per read of a file
 * through staging (docs/design.md, "Buffered or direct, per file"). The one
 * place that decides; the IO layer measures residency and flips the
 * descriptor, the settings give the mode and the budget.
 */
#include "load/load.h"

/* Unknown residency (the probe failed) counts as cached: buffered, as every
 * read was before auto existed. */
static int mostly_resident(const struct ferry__file *f, uint64_t offset, uint64_t len)
{
	uint64_t resident;
	return ferry__io_resident(f, offset, len, &resident) < 0 || resident >= len / 2;
}

/* Takes len bytes of the page-cache budget. Returns 0 when they do not fit. */
static int take_budget(const struct ferry__loader *ld, uint64_t len)
{
	uint64_t used = __atomic_load_n(ld->cache_used, __ATOMIC_RELAXED);
	do {
		if (len > ld->cache_budget || used > ld->cache_budget - len)
			return 0;
	} while (!__atomic_compare_exchange_n(ld->cache_used, &used, used + len, 1,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 1;
}

/*
 * Why a budget and not "cold means direct": O_DIRECT leaves nothing in the
 * page cache, so a dataset that fits in memory would be read from storage
 * every epoch, while buffered it is read from memory from the second epoch on
 * (about 20 times faster). Cold bytes are cached up to the budget, the rest
 * streams past the cache without evicting what was cached.
 */
void ferry__load_choose(const struct ferry__loader *ld, struct ferry__file *f, uint64_t offset,
			uint64_t len)
{
	if (ld->direct != FERRY_DIRECT_AUTO || f->direct || len < FERRY__DIRECT_MIN)
		return;
	if (mostly_resident(f, offset, len) || take_budget(ld, len))
		return;
	if (ferry__io_set_direct(f) < 0) /* refused: read buffered, and count it */
		__atomic_fetch_add(ld->cache_used, len, __ATOMIC_RELAXED);
}

void ferry__load_count_file(struct ferry__load_stats *stats, const struct ferry__file *f)
{
	if (f->mapped)
		stats->files_mapped++;
	else if (f->direct)
		stats->files_direct++;
	else
		stats->files_buffered++;
}
