// The driver API through dlopen, as loaders do: libcuda.so.1 and cuGetProcAddress, then a
// created context, a module from PTX text, cuLaunchKernel and copies; a module with a
// syntax error is refused with CUDA_ERROR_INVALID_PTX.
#include <cstdio>
#include <dlfcn.h>
#include <cuda.h>

static const char *ptx =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry triple(.param .u64 p, .param .u32 n) {\n"
    "  .reg .b64 %a, %o; .reg .b32 %i, %n, %v; .reg .pred %q;\n"
    "  ld.param.u64 %a, [p]; ld.param.u32 %n, [n]; mov.u32 %i, %tid.x;\n"
    "  setp.ge.u32 %q, %i, %n; @%q ret;\n"
    "  cvta.to.global.u64 %a, %a; mul.wide.u32 %o, %i, 4; add.s64 %a, %a, %o;\n"
    "  ld.global.u32 %v, [%a]; mul.lo.u32 %v, %v, 3; st.global.u32 [%a], %v;\n"
    "  ret;\n}\n";

typedef CUresult (*GetProc)(const char *, void **, int, cuuint64_t,
                            CUdriverProcAddressQueryResult *);

int main() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { printf("dlopen failed\n"); return 1; }
    GetProc get = (GetProc)dlsym(lib, "cuGetProcAddress_v2");
    void *f;
#define GET(name) (get(#name, &f, CUDA_VERSION, 0, nullptr), (decltype(&name))f)
    auto init = GET(cuInit);
    auto device_get = GET(cuDeviceGet);
    auto ctx_create = GET(cuCtxCreate);
    auto ctx_destroy = GET(cuCtxDestroy);
    auto load = GET(cuModuleLoadData);
    auto get_function = GET(cuModuleGetFunction);
    auto alloc = GET(cuMemAlloc);
    auto htod = GET(cuMemcpyHtoD);
    auto dtoh = GET(cuMemcpyDtoH);
    auto launch = GET(cuLaunchKernel);
    auto sync = GET(cuCtxSynchronize);
    auto error_name = GET(cuGetErrorName);
    CUdevice dev;
    CUcontext ctx;
    CUmodule module, bad;
    CUfunction triple;
    CUdeviceptr d;
    CUresult a = init(0), b = device_get(&dev, 0);  // (the order of arguments is unspecified)
    CUresult c = ctx_create(&ctx, nullptr, 0, dev);
    printf("init %d device %d context %d\n", a, b, c);
    a = load(&module, ptx);
    b = get_function(&triple, module, "triple");
    printf("module %d function %d\n", a, b);
    const char *name = "?";
    error_name(load(&bad, ".version 8.0\n.target sm_80\nthis is not ptx\n"), &name);
    printf("bad module: %s\n", name);
    unsigned values[5] = {1, 2, 3, 4, 5}, n = 5;
    alloc(&d, sizeof values);
    htod(d, values, sizeof values);
    void *args[] = {&d, &n};
    a = launch(triple, 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr);
    b = sync();
    printf("launch %d sync %d\n", a, b);
    dtoh(values, d, sizeof values);
    printf("values: %u %u %u %u %u\n", values[0], values[1], values[2], values[3], values[4]);
    printf("destroy %d\n", ctx_destroy(ctx));
    return 0;
}
