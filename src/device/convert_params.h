/*
 * The parameters of the CUDA transpose kernel (convert.cu), shared by the
 * kernel and its launcher (cuda.c), which passes the struct by value. Only
 * 64-bit fields, so that C and CUDA C++ lay it out alike.
 *
 * The array, its axes of length 1 dropped, has axes d0, mid[0..nmid), dl in
 * C order. In the Fortran-order source d0 is the fastest axis and dl the
 * slowest; in the C-order destination dl is the fastest. Each middle index
 * is a 2-D transpose of d0 x dl items, cut into 32 x 32 tiles.
 */
#ifndef FERRY_CONVERT_PARAMS_H
#define FERRY_CONVERT_PARAMS_H

#define FERRY__TP_MAX_MID 30 /* FERRY_MAX_DIMS - 2 */
#define FERRY__TP_TILE 32    /* items a tile's side */
#define FERRY__TP_ROWS 8     /* a block is TILE x ROWS threads */

struct ferry__tp_params {
	unsigned long long d0, dl;          /* the first and the last axis */
	unsigned long long tiles0, tilesl;  /* tiles along each */
	unsigned long long nmid;            /* middle axes */
	unsigned long long mid_count;       /* their product (1 when none) */
	unsigned long long tiles;           /* tiles0 * tilesl * mid_count */
	unsigned long long part;            /* bytes swapped as one: 0 (none), the
					       item size, or half of it */
	unsigned long long mid[FERRY__TP_MAX_MID];     /* middle axes, in order */
	unsigned long long fstride[FERRY__TP_MAX_MID]; /* each one's stride in the
							  source's middle index */
};

#endif
