// mandelbrot.cu: escape-time Mandelbrot set on a 2D grid: every pixel runs a loop whose trip
// count depends on its coordinates, so neighbouring threads diverge heavily.
//
// mandelbrot(int* iters, int width, int height, float x0, float y0, float dx, float dy,
//            int max_iter)
//   launch: grid = ((width + 15) / 16, (height + 15) / 16), block = (16, 16),
//           dynamic shared = 0
//   pixel (px, py): c = (x0 + px*dx, y0 + py*dy); z = 0; count iterations
//   z = z^2 + c (zr' = zr*zr - zi*zi + cr, zi' = 2*zr*zi + ci, in float, NVRTC contracting
//   to fma) while zr*zr + zi*zi <= 4 and count < max_iter; iters[py*width + px] = count
// mandelbrot_f64_smooth(double* out, int width, int height, double x0, double y0, double dx,
//                       double dy, int max_iter)
//   launch: as mandelbrot
//   the same in double; points that escape at count k < max_iter get the smooth value
//   k + 1 - log2(log(|z|)) (log and log2 from libdevice), others max_iter

extern "C" __global__ void mandelbrot(int* iters, int width, int height, float x0, float y0,
                                      float dx, float dy, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height)
        return;
    float cr = x0 + px * dx, ci = y0 + py * dy;
    float zr = 0.0f, zi = 0.0f;
    int count = 0;
    while (zr * zr + zi * zi <= 4.0f && count < max_iter) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
        ++count;
    }
    iters[py * width + px] = count;
}

extern "C" __global__ void mandelbrot_f64_smooth(double* out, int width, int height, double x0,
                                                 double y0, double dx, double dy, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= width || py >= height)
        return;
    double cr = x0 + px * dx, ci = y0 + py * dy;
    double zr = 0.0, zi = 0.0;
    int count = 0;
    while (zr * zr + zi * zi <= 4.0 && count < max_iter) {
        double t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        ++count;
    }
    double value = max_iter;
    if (count < max_iter)
        value = count + 1 - log2(log(sqrt(zr * zr + zi * zi)));
    out[py * width + px] = value;
}
