// Kernel parameters of every shape a C++ kernel can take, each echoed back by the kernel:
// 1-, 2-, 4- and 8-byte scalars side by side (so their offsets need padding), float and
// double, vector types (char3, float4, double2), a struct with mixed alignment, an array
// inside a struct, and a 2 KiB struct by value.
#include <cstring>

#include "common.h"

struct Mixed {
  char c;
  double d;
  short s;
  int i;
  char tail[3];
};

struct Big {
  int values[512];
};

struct Echo {
  long long c_s_i_ll[4];
  double f_d[2];
  int char3_xyz[3];
  float float4_xyzw[4];
  double double2_xy[2];
  double mixed[5];
  long long big_sum;
  int big_first_last[2];
  unsigned long long pointer;
};

__global__ void echo(char c, short s, int i, long long ll, float f, double d, char3 c3, float4 f4,
                     double2 d2, Mixed m, Big big, Echo *out) {
  Echo e;
  e.c_s_i_ll[0] = c, e.c_s_i_ll[1] = s, e.c_s_i_ll[2] = i, e.c_s_i_ll[3] = ll;
  e.f_d[0] = f, e.f_d[1] = d;
  e.char3_xyz[0] = c3.x, e.char3_xyz[1] = c3.y, e.char3_xyz[2] = c3.z;
  e.float4_xyzw[0] = f4.x, e.float4_xyzw[1] = f4.y, e.float4_xyzw[2] = f4.z;
  e.float4_xyzw[3] = f4.w;
  e.double2_xy[0] = d2.x, e.double2_xy[1] = d2.y;
  e.mixed[0] = m.c, e.mixed[1] = m.d, e.mixed[2] = m.s, e.mixed[3] = m.i;
  e.mixed[4] = m.tail[0] + m.tail[1] * 256 + m.tail[2] * 65536;
  e.big_sum = 0;
  for (int k = 0; k < 512; ++k) e.big_sum += big.values[k];
  e.big_first_last[0] = big.values[0], e.big_first_last[1] = big.values[511];
  e.pointer = (unsigned long long)out;
  *out = e;
}

int main() {
  Echo *out;
  CHECK(cudaMallocManaged(&out, sizeof(Echo)));
  Mixed m = {-5, 2.5e100, -1234, 987654321, {1, 2, 3}};
  Big big;
  long long big_sum = 0;
  for (int k = 0; k < 512; ++k) big.values[k] = k * k - 1000, big_sum += big.values[k];
  echo<<<1, 1>>>(-7, -30000, -2000000000, -9000000000000000000LL, 1.5f, -0.1,
                 make_char3(1, -2, 3), make_float4(0.25f, -8.0f, 1e30f, -0.0f),
                 make_double2(1e-300, 3.0), m, big, out);
  CHECK(cudaDeviceSynchronize());
  long long want_ints[4] = {-7, -30000, -2000000000, -9000000000000000000LL};
  double want_fd[2] = {1.5, -0.1};
  int want_c3[3] = {1, -2, 3};
  float want_f4[4] = {0.25f, -8.0f, 1e30f, -0.0f};
  double want_d2[2] = {1e-300, 3.0};
  double want_mixed[5] = {-5, 2.5e100, -1234, 987654321, 1 + 2 * 256 + 3 * 65536};
  int want_big[2] = {-1000, 511 * 511 - 1000};
  expect_equal("char, short, int, long long", out->c_s_i_ll, want_ints, 4);
  expect_equal("float, double", out->f_d, want_fd, 2);
  expect_equal("char3", out->char3_xyz, want_c3, 3);
  expect_equal("float4", out->float4_xyzw, want_f4, 4);
  expect_equal("double2", out->double2_xy, want_d2, 2);
  expect_equal("struct with mixed alignment", out->mixed, want_mixed, 5);
  expect_equal("2 KiB struct: sum", &out->big_sum, &big_sum, 1);
  expect_equal("2 KiB struct: first and last", out->big_first_last, want_big, 2);
  unsigned long long want_pointer = (unsigned long long)out;
  expect_equal("pointer", &out->pointer, &want_pointer, 1);
  CHECK(cudaFree(out));
  return finish();
}
