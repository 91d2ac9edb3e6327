// Checks shared by the whole-program corpus (tests/programs/*.cu).
//
// Every program prints deterministic lines and ends with PASS (exit 0), or says what differed
// and exits 1. A failing CUDA call names itself and CUDA's error name, so that a failure under
// ptxport reads the same as one under NVIDIA's runtime. Nothing printed to stdout depends on
// the device (no names, pointers, timings); notes that may differ go to stderr.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

static int g_failures = 0;

// A call that must succeed: the program cannot go on without it.
#define CHECK(call) check_call((call), #call, __FILE__, __LINE__)

static inline void check_call(cudaError_t err, const char *what, const char *file, int line) {
  if (err != cudaSuccess) {
    printf("FAIL %s:%d: %s returned %s\n", file, line, what, cudaGetErrorName(err));
    fflush(stdout);
    exit(1);
  }
}

// A fact the program checks and goes on: a false one is printed and counted.
static inline void require(bool ok, const char *what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    ++g_failures;
  }
}

// Prints "label: <error name>" and counts a failure unless the error is the expected one.
static inline void expect_error(const char *label, cudaError_t got, cudaError_t want) {
  printf("%s: %s\n", label, cudaGetErrorName(got));
  if (got != want) {
    printf("FAIL: %s: expected %s\n", label, cudaGetErrorName(want));
    ++g_failures;
  }
}

// Prints "label: ok", or the first few elements that differ and counts a failure.
template <typename T>
static inline void expect_equal(const char *label, const T *got, const T *want, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      if (bad < 5)
        printf("%s: [%zu] got %.17g want %.17g\n", label, i, (double)got[i], (double)want[i]);
      ++bad;
    }
  }
  if (bad == 0) {
    printf("%s: ok\n", label);
  } else {
    printf("FAIL: %s: %zu of %zu differ\n", label, bad, n);
    ++g_failures;
  }
}

// Like expect_equal for floating point results whose rounding may differ between devices
// (contracted multiply-adds, library functions): |got - want| <= tol * max(1, |want|).
template <typename T>
static inline void expect_close(const char *label, const T *got, const T *want, size_t n,
                                double tol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    double g = (double)got[i], w = (double)want[i];
    if (!(fabs(g - w) <= tol * fmax(1.0, fabs(w)))) {
      if (bad < 5) printf("%s: [%zu] got %.9g want %.9g\n", label, i, g, w);
      ++bad;
    }
  }
  if (bad == 0) {
    printf("%s: ok\n", label);
  } else {
    printf("FAIL: %s: %zu of %zu differ\n", label, bad, n);
    ++g_failures;
  }
}

// A step of a feature a portable runtime may refuse: true when the runtime refused it with
// cudaErrorNotSupported (the step goes to stderr, since where a runtime refuses may vary).
static inline bool refused(cudaError_t err, const char *step) {
  if (err == cudaErrorNotSupported) {
    fprintf(stderr, "note: %s: cudaErrorNotSupported\n", step);
    return true;
  }
  return false;
}

// The program's last line and exit status.
static inline int finish() {
  if (g_failures) {
    printf("FAIL (%d)\n", g_failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}
