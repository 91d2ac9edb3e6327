// printf from kernels: integer, floating point, string, character and padding conversions,
// several lines from one thread, lines from successive launches and from chosen threads of a
// grid in a fixed order (one launch per line, since the order of lines from concurrently
// running threads is not defined), interleaved with the host's own output.
#include "common.h"

__global__ void formats(int i, unsigned u, long long ll, double d, const char *label) {
  printf("ints: %d %i %u %x %X %o\n", i, -i, u, u, u, u);
  printf("long long: %lld %llu %llx\n", ll, (unsigned long long)ll, (unsigned long long)ll);
  printf("floats: %f %.3f %e %.2e %g %g\n", d, d, d, d, d, 1e-10);
  printf("float argument: %.4f\n", (float)d);
  printf("string: %s, char: %c, percent: %%\n", "device", 'Z');
  printf("padding: [%5d] [%-5d] [%05d] [%+d] [%8.3f] [%-8s]\n", 42, 42, 42, 42, d, "ab");
  printf("label argument is ignored here: %d\n", label == nullptr);
}

__global__ void from_thread(int wanted_block, int wanted_thread) {
  if (blockIdx.x == wanted_block && threadIdx.x == wanted_thread)
    printf("block %d thread %d of %d x %d\n", blockIdx.x, threadIdx.x, gridDim.x, blockDim.x);
}

__global__ void loop_lines(int n) {
  for (int k = 0; k < n; ++k) printf("line %d: %d squared is %d\n", k, k, k * k);
}

__global__ void no_newline() { printf("no newline, "); }

int main() {
  printf("host: before kernels\n");
  fflush(stdout);
  formats<<<1, 1>>>(12345, 3735928559u, -1234567890123LL, 3.14159265358979, nullptr);
  CHECK(cudaDeviceSynchronize());
  printf("host: after formats\n");
  fflush(stdout);
  const int picks[3][2] = {{0, 0}, {3, 17}, {7, 63}};
  for (const auto &p : picks) {
    from_thread<<<8, 64>>>(p[0], p[1]);
    CHECK(cudaDeviceSynchronize());
  }
  loop_lines<<<1, 1>>>(5);
  no_newline<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  printf("then the host's newline\n");
  return finish();
}
