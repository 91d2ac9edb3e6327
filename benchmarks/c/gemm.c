/* gemm.c: C = alpha * A @ B + beta * C for row-major float matrices (gemm_tiled.cu's
 * sgemm_tiled). i-k-j order: the innermost loop runs along rows of B and of an accumulator
 * row, so it vectorises, and each product is added in k order as the kernel does. */

#include <stdlib.h>

void sgemm(int M, int N, int K, float alpha, const float *restrict A, const float *restrict B,
           float beta, float *restrict C)
{
#pragma omp parallel
    {
        float *acc = malloc(sizeof(float) * (size_t)N);
#pragma omp for schedule(static)
        for (int i = 0; i < M; ++i) {
            for (int j = 0; j < N; ++j)
                acc[j] = 0.0f;
            for (int k = 0; k < K; ++k) {
                float a = A[(size_t)i * K + k];
                const float *b = B + (size_t)k * N;
                for (int j = 0; j < N; ++j)
                    acc[j] += a * b[j];
            }
            float *c = C + (size_t)i * N;
            for (int j = 0; j < N; ++j)
                c[j] = alpha * acc[j] + beta * c[j];
        }
        free(acc);
    }
}
