/*
 * Host-side conversions ferry applies to a payload after reading it: byte order
 * and Fortran-to-C layout. Pure functions on host memory.
 */
#ifndef FERRY_CONVERT_H
#define FERRY_CONVERT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reverses the byte order of count elements of itemsize bytes at data, in place.
 * A complex element (is_complex) swaps its two components separately; one-byte
 * elements are left alone. Returns nothing.
 */
void ferry__byteswap(void *data, uint64_t count, size_t itemsize, int is_complex);

/*
 * Writes into dst the C-order (row-major) layout of the Fortran-order array src
 * of the given rank (0..FERRY_MAX_DIMS), shape and itemsize. dst and src must not
 * overlap. Returns nothing.
 */
void ferry__fortran_to_c(void *dst, const void *src, int ndim, const int64_t *shape,
			 size_t itemsize);

#endif
