// Texture sampling and surface access in ordinary device code, for targets without texture
// units (cpu, spirv, amdgpu). passes/textures.py replaces each tex, tld4, txq, suld, sust and
// suq instruction by a call of one of these functions, linked from texture_sampler.ptx, which
// is this file compiled by NVRTC (python -m ptxport.passes.textures --regenerate; the pass
// keeps the PTX's digest, which tests/passes/test_texture_pass.py checks).
// Built with -fmad=false. The arithmetic is what an H100 does (measured with
// benchmarks/texture_check.py, docs/textures.md) and what tests/texture_reference.py models:
// normalized coordinates cut to 24 fractional bits, weights rounded to 8 fractional bits
// (half up), the weighted sum exact (float64 products, two-sum accumulation) and rounded once
// to float32, to nearest with ties away from zero; 1D textures filter as 2D at y = 0.
//
// A texture or surface object (a 64-bit handle) is the device address of a Descriptor that the
// runtime writes (ptxport/runtime/textures.py; the same layout, field for field). Enumerations
// hold CUDA's values: cudaAddressMode (wrap 0, clamp 1, mirror 2, border 3), cudaFilterMode
// (point 0, linear 1), cudaChannelFormatKind (signed 0, unsigned 1, float 2), cudaResourceType
// (array 0, linear 2, pitch2D 3).
//
// Semantics: CUDA C++ Programming Guide, "Texture Fetching" (nearest-point and linear
// filtering, 9-bit fixed-point weights with 8 fractional bits) and PTX ISA 9.7.10, 9.7.11.

struct Descriptor {
    unsigned long long data;          // address of texel (0, 0, 0) of layer 0
    unsigned long long pitch;         // bytes from one row to the next
    unsigned long long slice;         // bytes from one 2D slice (depth or layer) to the next
    unsigned int size[3];             // width, height, depth in texels (1 where absent)
    unsigned int layers;              // layers of a layered array (0: not layered)
    unsigned int kind;                // cudaChannelFormatKind of every channel
    unsigned int bits;                // bits per channel: 8, 16 or 32
    unsigned int channels;            // 1, 2 or 4
    unsigned int normalized_read;     // cudaReadModeNormalizedFloat
    unsigned int normalized_coords;
    unsigned int filter;              // cudaFilterMode
    unsigned int address[3];          // cudaAddressMode per dimension
    unsigned int resource;            // cudaResourceType
    float border[4];
    unsigned int dims;                // 1, 2 or 3: the resource's dimensions
};

struct __align__(16) Texel { unsigned int v[4]; };
struct __align__(16) SurfaceWords { unsigned long long v[4]; unsigned int out_of_bounds; };

// op bits of __ptxport_tex and __ptxport_tld4
#define OP_DIMS 3u            // 1, 2, 3
#define OP_INTEGER 4u         // integer (texel) coordinates
#define OP_LAYERED 8u

static __device__ const Descriptor *descriptor(unsigned long long handle) {
    return reinterpret_cast<const Descriptor *>(handle);
}

// The texel index along one dimension after the address mode; *outside for border texels.
// Wrap and mirror are defined for normalized coordinates only: with texel coordinates the
// hardware clamps instead (CUDA Programming Guide, Texture Fetching).
static __device__ __noinline__ int address(int i, int n, unsigned int mode, unsigned int normalized,
                              bool *outside) {
    if (!normalized && (mode == 0 || mode == 2)) mode = 1;
    if (mode == 0) {
        i %= n;
        return i < 0 ? i + n : i;
    }
    if (mode == 2) {
        int m = i % (2 * n);
        if (m < 0) m += 2 * n;
        return m < n ? m : 2 * n - 1 - m;
    }
    if (i < 0 || i >= n) *outside = *outside || mode == 3;
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

static __device__ const unsigned char *texel_address(const Descriptor *d, int x, int y, int z,
                                                     int layer) {
    unsigned long long bytes = (d->bits / 8) * d->channels;
    return reinterpret_cast<const unsigned char *>(d->data) + (unsigned long long)x * bytes +
           (unsigned long long)y * d->pitch + (unsigned long long)(z + layer) * d->slice;
}

static __device__ unsigned int channel_bits(const Descriptor *d, const unsigned char *p, int c) {
    if (d->bits == 8) return p[c];
    if (d->bits == 16) return reinterpret_cast<const unsigned short *>(p)[c];
    return reinterpret_cast<const unsigned int *>(p)[c];
}

// Whether the texture returns floats (float channels, or integers read as normalized floats).
static __device__ bool returns_float(const Descriptor *d) {
    return d->kind == 2 || d->normalized_read;
}

static __device__ float half_to_float(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// One channel as the texture returns it: the float, or the integer read as a normalized
// float (unsigned: v / (2^n - 1); signed: max(v / (2^(n-1) - 1), -1)), or the integer.
static __device__ unsigned int channel_value(const Descriptor *d, unsigned int raw) {
    if (d->kind == 2)
        return d->bits == 16 ? __float_as_uint(half_to_float((unsigned short)raw)) : raw;
    int shift = 32 - (int)d->bits;
    int value = d->kind == 0 ? ((int)(raw << shift) >> shift) : (int)raw;
    if (!d->normalized_read) return (unsigned int)value;
    if (d->kind == 1) return __float_as_uint((float)(unsigned int)value / (float)((1u << d->bits) - 1));
    float f = (float)value / (float)((1 << (d->bits - 1)) - 1);
    return __float_as_uint(f < -1.0f ? -1.0f : f);
}

// Texel (x, y, z) of `layer`, addressed: four channels as returned (missing ones 0, border
// texels included: what an H100 returns).
extern "C" __device__ __noinline__ Texel __ptxport_fetch(const Descriptor *d, int x, int y, int z, int layer) {
    bool outside = false;
    Texel t;
    if (d->resource == 2 && (x < 0 || x >= (int)d->size[0])) {
        outside = true;     // linear memory: no addressing, nothing outside
        x = 0;
    }
    x = address(x, (int)d->size[0], d->address[0], d->normalized_coords, &outside);
    y = address(y, (int)d->size[1], d->address[1], d->normalized_coords, &outside);
    z = address(z, (int)d->size[2], d->address[2], d->normalized_coords, &outside);
    if (outside) {
        for (int c = 0; c < 4; ++c)
            t.v[c] = d->resource == 2 || c >= (int)d->channels ? 0u : __float_as_uint(d->border[c]);
        return t;
    }
    const unsigned char *p = texel_address(d, x, y, z, layer);
    for (int c = 0; c < 4; ++c) {
        if (c < (int)d->channels) t.v[c] = channel_value(d, channel_bits(d, p, c));
        else t.v[c] = 0u;
    }
    return t;
}

// A filtering weight's numerator: the fractional part in 8 fractional bits, rounded half up.
static __device__ double weight(double fraction) {
    return floor(fraction * 256.0 + 0.5);
}

// Knuth's two-sum: s + *err == a + b exactly.
static __device__ double two_sum(double a, double b, double *err) {
    double s = a + b;
    double v = s - a;
    *err = (a - (s - v)) + (b - v);
    return s;
}

// hi + lo (|lo| below half an ulp of hi) to float32: nearest, ties away from zero.
static __device__ float round_away(double hi, double lo) {
    float t = __double2float_rz(hi);
    double rest = fabs(hi - (double)t);             // exact
    float next = nextafterf(t, hi < 0.0 ? -__int_as_float(0x7f800000) : __int_as_float(0x7f800000));
    if (t == 0.0f && hi == 0.0) return 0.0f;
    double half = fabs((double)next - (double)t) * 0.5;
    bool same = lo == 0.0 || ((lo < 0.0) == (hi < 0.0));
    return rest > half || (rest == half && same) ? next : t;
}

static __device__ int layer_index(const Descriptor *d, unsigned int layer) {
    int last = (int)d->layers - 1;
    int l = (int)layer;
    return l < 0 ? 0 : (l > last ? (last < 0 ? 0 : last) : l);
}

// A texel coordinate: a normalized one cut to 24 fractional bits (toward -inf) and scaled by
// the size exactly, as an H100 does.
static __device__ double texel_coordinate(const Descriptor *d, float c, int dim) {
    if (!d->normalized_coords) return (double)c;
    double cut = floor((double)c * 16777216.0) * (1.0 / 16777216.0);
    return cut * (double)d->size[dim];
}

// Linear filtering over `axes` dimensions (2 for a 1D texture: y = 0 in a texture of height 1).
static __device__ Texel sample_linear(const Descriptor *d, const double *u, int axes, int layer) {
    int i[3] = {0, 0, 0};
    double q[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < axes; ++k) {
        double b = u[k] - 0.5;
        double f = floor(b);
        i[k] = (int)f;
        q[k] = weight(b - f);
    }
    double hi[4] = {0.0, 0.0, 0.0, 0.0}, lo[4] = {0.0, 0.0, 0.0, 0.0};
    for (int n = 0; n < (1 << axes); ++n) {
        double w = 1.0;
        for (int k = 0; k < axes; ++k) w = w * ((((n >> k) & 1) ? q[k] : 256.0 - q[k]) * (1.0 / 256.0));
        Texel t = __ptxport_fetch(d, i[0] + (n & 1), i[1] + ((n >> 1) & 1), i[2] + ((n >> 2) & 1), layer);
        for (int c = 0; c < 4; ++c) {
            double err, err2;
            hi[c] = two_sum(hi[c], w * (double)__uint_as_float(t.v[c]), &err);   // exact product
            hi[c] = two_sum(hi[c], lo[c] + err, &err2);
            lo[c] = err2;
        }
    }
    Texel out;
    for (int c = 0; c < 4; ++c) out.v[c] = __float_as_uint(round_away(hi[c], lo[c]));
    return out;
}

extern "C" __device__ __noinline__ Texel __ptxport_tex(unsigned long long handle, unsigned int op,
                                                      unsigned int c0, unsigned int c1,
                                                      unsigned int c2, unsigned int layer) {
    const Descriptor *d = descriptor(handle);
    int dims = (int)(op & OP_DIMS);
    int l = (op & OP_LAYERED) ? layer_index(d, layer) : 0;
    unsigned int c[3] = {c0, c1, c2};
    if (op & OP_INTEGER)
        return __ptxport_fetch(d, (int)c0, dims > 1 ? (int)c1 : 0, dims > 2 ? (int)c2 : 0, l);
    double u[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < dims; ++k) u[k] = texel_coordinate(d, __uint_as_float(c[k]), k);
    if (d->filter == 1 && returns_float(d)) return sample_linear(d, u, dims < 2 ? 2 : dims, l);
    return __ptxport_fetch(d, (int)floor(u[0]), (int)floor(u[1]), (int)floor(u[2]), l);
}

// tld4.comp.2d: component `comp` of the four texels that bilinear filtering at (x, y) reads,
// in the PTX ISA's order: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
extern "C" __device__ __noinline__ Texel __ptxport_tld4(unsigned long long handle, unsigned int op,
                                                       unsigned int comp, unsigned int c0,
                                                       unsigned int c1, unsigned int layer) {
    const Descriptor *d = descriptor(handle);
    int l = (op & OP_LAYERED) ? layer_index(d, layer) : 0;
    int i = (int)floor(texel_coordinate(d, __uint_as_float(c0), 0) - 0.5);
    int j = (int)floor(texel_coordinate(d, __uint_as_float(c1), 1) - 0.5);
    const int di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
    Texel out;
    for (int n = 0; n < 4; ++n) out.v[n] = __ptxport_fetch(d, i + di[n], j + dj[n], 0, l).v[comp];
    return out;
}

// op bits of __ptxport_suld and __ptxport_sust
#define SU_DIMS 3u            // 1, 2, 3
#define SU_LAYERED 8u
#define SU_SIZE_SHIFT 4       // log2 of the element size in bytes (1, 2, 4, 8)
#define SU_COUNT_SHIFT 8      // elements: 1, 2 or 4
#define SU_CLAMP_SHIFT 12     // 0 .trap, 1 .clamp, 2 .zero

// The address of a surface access of `bytes` at byte column x, row y, slice z; null when it is
// out of bounds under .zero or .trap (the access does nothing), and then *trap is set under
// .trap: the caller makes that CUDA's fault (passes/textures.py: an assert in the kernel).
static __device__ unsigned char *surface_address(unsigned long long handle, unsigned int op,
                                                 int x, int y, int z, unsigned int layer,
                                                 unsigned int *trap) {
    const Descriptor *d = descriptor(handle);
    int dims = (int)(op & SU_DIMS);
    int bytes = (1 << ((op >> SU_SIZE_SHIFT) & 3)) * (int)((op >> SU_COUNT_SHIFT) & 7);
    int row = (int)((d->bits / 8) * d->channels * d->size[0]);
    int limit[3] = {row - bytes, (int)d->size[1] - 1, (int)d->size[2] - 1};
    int at[3] = {x, dims > 1 ? y : 0, dims > 2 ? z : 0};
    unsigned int mode = (op >> SU_CLAMP_SHIFT) & 3;
    for (int k = 0; k < 3; ++k) {
        if (at[k] >= 0 && at[k] <= limit[k]) continue;
        if (mode != 1) {
            *trap = mode == 0;
            return nullptr;
        }
        at[k] = at[k] < 0 ? 0 : limit[k];
    }
    int l = (op & SU_LAYERED) ? layer_index(d, layer) : 0;
    return reinterpret_cast<unsigned char *>(d->data) + at[0] +
           (unsigned long long)at[1] * d->pitch + (unsigned long long)(at[2] + l) * d->slice;
}

extern "C" __device__ __noinline__ SurfaceWords __ptxport_suld(
        unsigned long long handle, unsigned int op, int x, int y, int z, unsigned int layer) {
    SurfaceWords out = {{0, 0, 0, 0}, 0};
    unsigned char *p = surface_address(handle, op, x, y, z, layer, &out.out_of_bounds);
    if (p == nullptr) return out;
    int size = 1 << ((op >> SU_SIZE_SHIFT) & 3);
    int count = (int)((op >> SU_COUNT_SHIFT) & 7);
    for (int n = 0; n < count; ++n) {
        unsigned long long v = 0;
        for (int b = 0; b < size; ++b) v |= (unsigned long long)p[n * size + b] << (8 * b);
        out.v[n] = v;
    }
    return out;
}

extern "C" __device__ __noinline__ unsigned int __ptxport_sust(
        unsigned long long handle, unsigned int op, int x, int y, int z, unsigned int layer,
        unsigned long long v0, unsigned long long v1, unsigned long long v2,
        unsigned long long v3) {
    unsigned int trap = 0;
    unsigned char *p = surface_address(handle, op, x, y, z, layer, &trap);
    if (p == nullptr) return trap;
    int size = 1 << ((op >> SU_SIZE_SHIFT) & 3);
    int count = (int)((op >> SU_COUNT_SHIFT) & 7);
    unsigned long long v[4] = {v0, v1, v2, v3};
    for (int n = 0; n < count; ++n)
        for (int b = 0; b < size; ++b) p[n * size + b] = (unsigned char)(v[n] >> (8 * b));
    return 0;
}

// txq and suq: query numbers as in passes/textures.py's QUERIES.
extern "C" __device__ __noinline__ unsigned int __ptxport_query(unsigned long long handle,
                                                               unsigned int query) {
    const Descriptor *d = descriptor(handle);
    switch (query) {
    case 0: return d->size[0];
    case 1: return d->dims > 1 ? d->size[1] : 0;
    case 2: return d->dims > 2 ? d->size[2] : 0;
    case 3: return d->layers;
    case 4: return d->normalized_coords;
    case 5: return d->filter;
    case 6: return d->address[0];
    case 7: return d->address[1];
    case 8: return d->address[2];
    case 9: return 0;       // num_mipmap_levels: no mipmapped textures
    default: return 0;
    }
}
