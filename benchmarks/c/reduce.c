/* reduce.c: sums of a whole array (reduce_shared.cu's reduce_sum_i32, reduce_warp.cu's
 * reduce_sum_warp_f64). `omp simd` lets gcc reassociate the double sum into vector lanes,
 * which it may not do on its own without -ffast-math; integer sums vectorise anyway. */

int reduce_sum_i32(const int *restrict x, long n)
{
    int s = 0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (long i = 0; i < n; ++i)
        s += x[i];
    return s;
}

double reduce_sum_f64(const double *restrict x, long n)
{
    double s = 0.0;
#pragma omp parallel for simd reduction(+ : s) schedule(static)
    for (long i = 0; i < n; ++i)
        s += x[i];
    return s;
}
