/*
 * ferry's conversion kernels for the CUDA device: byte swaps and the Fortran-
 * to-C transpose of .npy payloads already in device memory. No CUDA runtime:
 * src/device/ptx_to_c.sh compiles this file to PTX (nvcc -ptx) into the C
 * string of convert_ptx.h, which is committed, so that building ferry needs
 * no nvcc; cuda.c loads it with cuModuleLoadData at the first conversion. The
 * Makefile regenerates convert_ptx.h where nvcc exists and this file changed.
 *
 * Kernels (extern "C", so the PTX names are these):
 *   ferry_swap_P (P = 2, 4, 8, 16): reverses the bytes of each of n items of
 *     P bytes, dst == src allowed.
 *   ferry_transpose_S (S = item size, 1..16): writes the C-order array of
 *     the Fortran-order src, through 32 x 32 tiles in shared memory (see
 *     convert_params.h), reads and writes each 32 items wide, swapping the
 *     bytes of each p.part-byte part of an item as it goes (0: none; S: the
 *     item; S / 2: each half, as complex numbers are).
 * Items are loaded as 1-, 2-, 4- or 8-byte words (16-byte items as two
 * 8-byte words), so dst and src must be aligned to min(S, 8).
 */
#include "convert_params.h"

typedef unsigned long long u64;

struct item16 { /* 16 bytes, 8-aligned as a complex128 is */
	u64 lo, hi;
};

__device__ __forceinline__ unsigned bswap32(unsigned x)
{
	return __byte_perm(x, 0, 0x0123);
}

__device__ __forceinline__ u64 bswap64(u64 x)
{
	return ((u64)bswap32((unsigned)x) << 32) | bswap32((unsigned)(x >> 32));
}

/* swap(v, part) reverses each part-byte part of an item (part 0: none; the
 * value is the same for every thread of a launch, so the branch costs little). */
__device__ __forceinline__ unsigned char swap(unsigned char v, unsigned part)
{
	return v;
}

__device__ __forceinline__ unsigned short swap(unsigned short v, unsigned part)
{
	return part == 2 ? (unsigned short)((v >> 8) | (v << 8)) : v;
}

__device__ __forceinline__ unsigned swap(unsigned v, unsigned part)
{
	if (part == 4)
		return bswap32(v);
	return part == 2 ? __byte_perm(v, 0, 0x2301) : v;
}

__device__ __forceinline__ u64 swap(u64 v, unsigned part)
{
	if (part == 8)
		return bswap64(v);
	if (part == 4)
		return ((u64)bswap32((unsigned)(v >> 32)) << 32) | bswap32((unsigned)v);
	return v;
}

__device__ __forceinline__ item16 swap(item16 v, unsigned part)
{
	item16 r = v;
	if (part == 16) {
		r.lo = bswap64(v.hi);
		r.hi = bswap64(v.lo);
	} else if (part == 8) {
		r.lo = bswap64(v.lo);
		r.hi = bswap64(v.hi);
	}
	return r;
}

template <typename T>
__device__ __forceinline__ void swap_items(T *dst, const T *src, u64 n)
{
	u64 step = (u64)gridDim.x * blockDim.x;
	for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
		dst[i] = swap(src[i], (unsigned)sizeof(T));
}

/* The source offset (in d0-long columns) of middle index m, counted in C order. */
__device__ __forceinline__ u64 middle_offset(const ferry__tp_params &p, u64 m)
{
	u64 mf = 0;
#pragma unroll 1
	for (int k = FERRY__TP_MAX_MID - 1; k >= 0; k--) {
		if ((u64)k < p.nmid) {
			mf += (m % p.mid[k]) * p.fstride[k];
			m /= p.mid[k];
		}
	}
	return mf;
}

/* Each block takes tiles t = (m * tiles0 + t0) * tilesl + tl in turn. */
template <typename T>
__device__ __forceinline__ void transpose(T *dst, const T *src, const ferry__tp_params &p)
{
	__shared__ T tile[FERRY__TP_TILE][FERRY__TP_TILE + 1];
	const u64 srow = p.d0 * p.mid_count, drow = p.mid_count * p.dl;
	const unsigned part = (unsigned)p.part;
	for (u64 t = blockIdx.x; t < p.tiles; t += gridDim.x) {
		u64 tl = t % p.tilesl, rest = t / p.tilesl;
		u64 t0 = rest % p.tiles0, m = rest / p.tiles0;
		const T *s = src + p.d0 * middle_offset(p, m);
		u64 i0 = t0 * FERRY__TP_TILE + threadIdx.x;
		for (unsigned r = threadIdx.y; r < FERRY__TP_TILE; r += FERRY__TP_ROWS) {
			u64 il = tl * FERRY__TP_TILE + r;
			if (i0 < p.d0 && il < p.dl)
				tile[r][threadIdx.x] = swap(s[il * srow + i0], part);
		}
		__syncthreads();
		T *d = dst + m * p.dl;
		u64 jl = tl * FERRY__TP_TILE + threadIdx.x;
		for (unsigned r = threadIdx.y; r < FERRY__TP_TILE; r += FERRY__TP_ROWS) {
			u64 j0 = t0 * FERRY__TP_TILE + r;
			if (j0 < p.d0 && jl < p.dl)
				d[j0 * drow + jl] = tile[threadIdx.x][r];
		}
		__syncthreads();
	}
}

#define SWAP_KERNEL(P, T)                                                              \
	extern "C" __global__ void __launch_bounds__(256)                              \
	ferry_swap_##P(T *dst, const T *src, u64 n)                                    \
	{                                                                              \
		swap_items<T>(dst, src, n);                                            \
	}

#define TRANSPOSE_KERNEL(S, T)                                                         \
	extern "C" __global__ void __launch_bounds__(FERRY__TP_TILE * FERRY__TP_ROWS)  \
	ferry_transpose_##S(T *dst, const T *src, const ferry__tp_params p)            \
	{                                                                              \
		transpose<T>(dst, src, p);                                             \
	}

SWAP_KERNEL(2, unsigned short)
SWAP_KERNEL(4, unsigned)
SWAP_KERNEL(8, u64)
SWAP_KERNEL(16, item16)

TRANSPOSE_KERNEL(1, unsigned char)
TRANSPOSE_KERNEL(2, unsigned short)
TRANSPOSE_KERNEL(4, unsigned)
TRANSPOSE_KERNEL(8, u64)
TRANSPOSE_KERNEL(16, item16)
