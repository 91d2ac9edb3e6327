// cudaMalloc3D and cudaMemcpy3D both ways (a sub-box), cudaMemset3D, and
// cudaPointerGetAttributes for device, pinned and plain host memory.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

int main() {
    const int nx = 10, ny = 6, nz = 4;
    static int host[nz][ny][nx], back[nz][ny][nx];
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) host[z][y][x] = 100 * z + 10 * y + x;
    cudaExtent extent = make_cudaExtent(nx * sizeof(int), ny, nz);
    cudaPitchedPtr dev;
    cudaError_t e = cudaMalloc3D(&dev, extent);
    printf("malloc3d: %s\n", cudaGetErrorName(e));
    printf("memset3d: %s\n", cudaGetErrorName(cudaMemset3D(dev, 0, extent)));
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(host, nx * sizeof(int), nx, ny);
    up.dstPtr = dev;
    up.extent = extent;
    up.kind = cudaMemcpyHostToDevice;
    printf("up: %s\n", cudaGetErrorName(cudaMemcpy3D(&up)));
    cudaMemcpy3DParms down = {};  // a sub-box: x 2..5, y 1..4, z 1..2
    down.srcPtr = dev;
    down.srcPos = make_cudaPos(2 * sizeof(int), 1, 1);
    down.dstPtr = make_cudaPitchedPtr(back, nx * sizeof(int), nx, ny);
    down.dstPos = make_cudaPos(2 * sizeof(int), 1, 1);
    down.extent = make_cudaExtent(4 * sizeof(int), 4, 2);
    down.kind = cudaMemcpyDeviceToHost;
    printf("down: %s\n", cudaGetErrorName(cudaMemcpy3D(&down)));
    int wrong = 0, copied = 0;
    for (int z = 0; z < nz; z++)
        for (int y = 0; y < ny; y++)
            for (int x = 0; x < nx; x++) {
                bool inside = x >= 2 && x < 6 && y >= 1 && y < 5 && z >= 1 && z < 3;
                copied += inside;
                wrong += back[z][y][x] != (inside ? host[z][y][x] : 0);
            }
    printf("copied %d wrong %d\n", copied, wrong);

    cudaPointerAttributes a;
    e = cudaPointerGetAttributes(&a, dev.ptr);
    printf("device pointer: %s type %d\n", cudaGetErrorName(e), (int)a.type);
    int *plain = (int *)malloc(16);
    e = cudaPointerGetAttributes(&a, plain);
    printf("host pointer: %s type %d\n", cudaGetErrorName(e), (int)a.type);
    free(plain);
    return wrong != 0;
}
