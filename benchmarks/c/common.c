/* common.c: thread-count control for the C baselines of benchmarks/cpu_kernels.py.
 *
 * The benchmark measures each baseline on one core and on all cores in the same process, so
 * it sets OpenMP's team size through this function rather than OMP_NUM_THREADS (read once,
 * at start-up). */

#include <omp.h>

void bench_set_threads(int n)
{
    omp_set_num_threads(n);
}

int bench_max_threads(void)
{
    return omp_get_max_threads();
}
