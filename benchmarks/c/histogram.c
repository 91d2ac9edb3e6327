/* histogram.c: byte-value histogram (histogram.cu's histogram_shared): each thread counts
 * into its own 256 bins, then adds them to the shared result with atomics. */

void histogram_u8(const unsigned char *restrict data, unsigned *restrict hist, long n)
{
#pragma omp parallel
    {
        unsigned local[256] = {0};
#pragma omp for schedule(static) nowait
        for (long i = 0; i < n; ++i)
            local[data[i]]++;
        for (int v = 0; v < 256; ++v)
            if (local[v]) {
#pragma omp atomic
                hist[v] += local[v];
            }
    }
}
