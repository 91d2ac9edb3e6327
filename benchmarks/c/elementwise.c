/* elementwise.c: y = a*x + y (saxpy.cu's saxpy) and c = a + b (vector_add.cu's
 * vector_add_f32); gcc vectorises both loops, OpenMP splits them across cores. */

void saxpy(float a, const float *restrict x, float *restrict y, long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i)
        y[i] = a * x[i] + y[i];
}

void vector_add_f32(const float *restrict a, const float *restrict b, float *restrict c, long n)
{
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i)
        c[i] = a[i] + b[i];
}
