// Texture sampling and surface access in ordinary device code, for targets without texture
// units (cpu, spirv, amdgpu). passes/textures.py replaces each tex, tld4, txq, suld, sust and
// suq instruction by a call of one of these functions, linked from texture_sampler.ptx, which
// is this file compiled by NVRTC (python -m ptxport.passes.textures --regenerate; the pass
// keeps the PTX's digest, which tests/passes/test_texture_pass.py checks).
// Built with -fmad=false. The arithmetic is what an H100 does (every fetch of
// benchmarks/texture_check.py replayed by benchmarks/texture_fit.py, docs/textures.md) and what
// tests/texture_reference.py models: normalized coordinates cut to 24 fractional bits; linear
// filtering with integer weights of 256 made from 8-bit fractions (weights()); float texels
// aligned per z slice to 4 bits below their significand and summed exactly, rounded once to
// float32 (float16 for half textures), to nearest with ties away from zero; integers read as
// normalized floats filtered in 16-bit fixed point; 1D textures filter as 2D at y = 0.
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
    unsigned int cubemap;             // faces are layers: face f of cube c is layer 6 c + f
    unsigned int levels;              // mipmap levels (0: none); this Descriptor is level 0's
    unsigned int mip_filter;          // cudaFilterMode between levels
    float lod_bias;                   // mipmapLevelBias
    float min_lod, max_lod;           // min/maxMipmapLevelClamp
    unsigned int reserved0;
    unsigned long long level_table;   // `levels` Descriptors, level i's at index i
    unsigned long long reserved[3];   // 160 bytes in all
};

struct __align__(16) Texel { unsigned int v[4]; };
struct __align__(16) SurfaceWords { unsigned long long v[4]; unsigned int out_of_bounds; };

// op bits of __ptxport_tex and __ptxport_tld4
#define OP_DIMS 3u            // 1, 2, 3
#define OP_INTEGER 4u         // integer (texel) coordinates
#define OP_LAYERED 8u
#define OP_CUBE 16u           // x, y, z: a direction (tex.cube, tex.acube)

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

// The integer a normalized-float read maps to 1.0: 2^n - 1 (unsigned) or 2^(n-1) - 1.
static __device__ int norm_scale(const Descriptor *d) {
    return d->kind == 1 ? (1 << d->bits) - 1 : (1 << (d->bits - 1)) - 1;
}

// A channel's integer, sign-extended for signed formats.
static __device__ int channel_int(const Descriptor *d, unsigned int raw) {
    int shift = 32 - (int)d->bits;
    return d->kind == 0 ? ((int)(raw << shift) >> shift) : (int)raw;
}

// One channel as the texture returns it: the float, or the integer read as a normalized
// float (unsigned: v / (2^n - 1); signed: max(v / (2^(n-1) - 1), -1)), or the integer.
static __device__ unsigned int channel_value(const Descriptor *d, unsigned int raw) {
    if (d->kind == 2)
        return d->bits == 16 ? __float_as_uint(half_to_float((unsigned short)raw)) : raw;
    int value = channel_int(d, raw);
    if (!d->normalized_read) return (unsigned int)value;
    float f = (float)value / (float)norm_scale(d);
    return __float_as_uint(f < -1.0f ? -1.0f : f);
}

// Border color channel c of a format read as normalized floats, converted to the format:
// scaled, rounded to nearest with ties down and clamped (an H100 reads 0.5 as 127/255).
static __device__ __noinline__ int border_int(const Descriptor *d, int c) {
    int scale = norm_scale(d);
    double v = ceil((double)d->border[c] * (double)scale - 0.5);
    double low = d->kind == 1 ? 0.0 : -(double)scale;
    return (int)(v < low ? low : (v > (double)scale ? (double)scale : v));
}

// Addresses texel (x, y, z) in place; whether it is a border texel.
static __device__ bool locate(const Descriptor *d, int *x, int *y, int *z) {
    bool outside = false;
    if (d->resource == 2 && (*x < 0 || *x >= (int)d->size[0])) {
        outside = true;     // linear memory: no addressing, nothing outside
        *x = 0;
    }
    *x = address(*x, (int)d->size[0], d->address[0], d->normalized_coords, &outside);
    *y = address(*y, (int)d->size[1], d->address[1], d->normalized_coords, &outside);
    *z = address(*z, (int)d->size[2], d->address[2], d->normalized_coords, &outside);
    return outside;
}

// Texel (x, y, z) of `layer`, addressed: four channels as returned (missing ones 0, border
// texels included: what an H100 returns).
extern "C" __device__ __noinline__ Texel __ptxport_fetch(const Descriptor *d, int x, int y, int z, int layer) {
    Texel t;
    if (locate(d, &x, &y, &z)) {
        for (int c = 0; c < 4; ++c) {
            if (d->resource == 2 || c >= (int)d->channels) t.v[c] = 0u;
            else if (d->kind != 2 && d->normalized_read)
                t.v[c] = __float_as_uint((float)border_int(d, c) / (float)norm_scale(d));
            else t.v[c] = __float_as_uint(d->border[c]);
        }
        return t;
    }
    const unsigned char *p = texel_address(d, x, y, z, layer);
    for (int c = 0; c < 4; ++c) {
        if (c < (int)d->channels) t.v[c] = channel_value(d, channel_bits(d, p, c));
        else t.v[c] = 0u;
    }
    return t;
}

// Texel (x, y, z) of `layer` as linear filtering reads it, in the format's own terms: the
// float, or the integer (border texels: the border color, converted for integers).
static __device__ __noinline__ void stored_texel(const Descriptor *d, int x, int y, int z,
                                                 int layer, double *v) {
    bool outside = locate(d, &x, &y, &z);
    const unsigned char *p = texel_address(d, x, y, z, layer);
    for (int c = 0; c < 4; ++c) {
        if (c >= (int)d->channels) v[c] = 0.0;
        else if (outside) v[c] = d->kind == 2 ? (double)d->border[c] : (double)border_int(d, c);
        else if (d->kind != 2) v[c] = (double)channel_int(d, channel_bits(d, p, c));
        else if (d->bits == 16) v[c] = (double)half_to_float((unsigned short)channel_bits(d, p, c));
        else v[c] = (double)__uint_as_float(channel_bits(d, p, c));
    }
}

// Knuth's two-sum: s + *err == a + b exactly.
static __device__ double two_sum(double a, double b, double *err) {
    double s = a + b;
    double v = s - a;
    *err = (a - (s - v)) + (b - v);
    return s;
}

// frexp's exponent of a nonzero normal double (v = m 2^e, 0.5 <= |m| < 1), and 2^e for a
// normal e: bit fields, so that the sampler needs no libdevice ilogb or ldexp.
static __device__ int exponent_of(double v) {
    return ((__double2hiint(v) >> 20) & 0x7ff) - 1022;
}

static __device__ double pow2(int e) {
    return __hiloint2double((e + 1023) << 20, 0);
}

// hi + lo (|lo| below half an ulp of hi) rounded to a float of `digits` significant bits
// whose smallest normal exponent is `min_exp` (float32: 24, -126; float16: 11, -14): nearest,
// ties away from zero.
static __device__ double round_away(double hi, double lo, int digits, int min_exp) {
    if (hi == 0.0) return 0.0;
    int e = exponent_of(hi) - 1;
    double ulp = pow2((e < min_exp ? min_exp : e) - (digits - 1));
    double t = trunc(hi / ulp) * ulp;               // exact
    double rest = fabs(hi - t);                     // exact
    bool same = lo == 0.0 || ((lo < 0.0) == (hi < 0.0));
    return rest > 0.5 * ulp || (rest == 0.5 * ulp && same) ? t + copysign(ulp, hi) : t;
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

// whole * fraction / 256 rounded to nearest, ties up (both >= 0).
static __device__ int share(int whole, int fraction) {
    return (whole * fraction + 128) >> 8;
}

// Integer weights of 256 (w[corner], bit k of corner: the upper texel along axis k) from the
// 8-bit fractions q, as an H100 makes them. Each z slice's weight Z (256 - q_z and q_z; 256
// in 2D) is split between x0 and x1, X1 = Z q_x / 256, and each of those between y0 and y1:
// X1 gives its y1 corner X1 q_y / 256, X0 its y0 corner X0 (256 - q_y) / 256, every share
// rounded to nearest with ties up and the sibling taking the rest (so the diagonal corners
// are the rounded ones; the weights are not separable).
// `all`: the weight of a 2D footprint (256; a mipmap level's share in trilinear filtering).
static __device__ void weights(const int *q, int axes, int *w, int all) {
    for (int z = 0; z < (axes == 3 ? 2 : 1); ++z) {
        int whole = axes == 3 ? (z ? q[2] : 256 - q[2]) : all;
        int x1 = share(whole, q[0]), x0 = whole - x1;
        int *slice = w + 4 * z;
        slice[3] = share(x1, q[1]);
        slice[1] = x1 - slice[3];
        slice[0] = share(x0, 256 - q[1]);
        slice[2] = x0 - slice[0];
    }
}

// Float texels: in each z slice, cut toward zero to `bits` bits below the largest exponent
// of the weighted nonzero texels (the significand and 4 bits more); the weighted sum is
// exact (two-sum) and rounded once.
static __device__ __noinline__ float filter_float(double (*v)[4], const int *w, int corners,
                                                  int c, bool half) {
    int bits = half ? 15 : 28;
    double hi = 0.0, lo = 0.0;
    for (int slab = 0; slab < corners; slab += 4) {
        int top = -100000;
        for (int n = slab; n < slab + 4; ++n)
            if (w[n] > 0 && v[n][c] != 0.0 && exponent_of(v[n][c]) > top)
                top = exponent_of(v[n][c]);
        if (top == -100000) continue;
        for (int n = slab; n < slab + 4; ++n) {
            double cut = trunc(v[n][c] * pow2(bits - top)) * pow2(top - bits);     // exact
            double err, err2;
            hi = two_sum(hi, (double)w[n] * (1.0 / 256.0) * cut, &err);     // exact product
            hi = two_sum(hi, lo + err, &err2);
            lo = err2;
        }
    }
    return (float)(half ? round_away(hi, lo, 11, -14) : round_away(hi, lo, 24, -126));
}

// Integers read as normalized floats filter in 16-bit fixed point: 8-bit unsigned texels
// widened by 257, the sum rounded to a 16-bit integer (ties up); 8-bit signed texels filter
// as they are, to s = sum w t (8 fractional bits), and scale by about 32767/32512 as an H100
// does: s + round((s >> 4) * 257 / 2^11), the shift toward -inf (docs/textures.md).
static __device__ __noinline__ float filter_normalized(const Descriptor *d, double (*v)[4],
                                                       const int *w, int corners, int c) {
    long long total = 0;
    for (int n = 0; n < corners; ++n) total += (long long)w[n] * (long long)v[n][c];
    long long value;
    if (d->bits == 8 && d->kind == 0) {
        value = total + (((total >> 4) * 257 + 1024) >> 11);
    } else {
        value = ((d->bits == 8 ? total * 257 : total) + 128) >> 8;
    }
    float f = (float)((double)value / (d->kind == 0 ? 32767.0 : 65535.0));
    return f < -1.0f ? -1.0f : f;
}

// The texels and weights of linear filtering over `axes` dimensions (2 for a 1D texture: y = 0
// in a texture of height 1) of the `dims` coordinates u, weighing `all` (of 256) in all; clamp
// mode clamps u to [0.5, size - 0.5] first. Returns the number of corners (4 or 8).
static __device__ int footprint(const Descriptor *d, double *u, int dims, int layer, bool clamp,
                                int all, int *w, double (*v)[4]) {
    int axes = dims < 2 ? 2 : dims;
    int i[3] = {0, 0, 0}, q[3] = {0, 0, 0};
    for (int k = 0; k < axes; ++k) {
        unsigned int mode = d->address[k];
        if (k < dims && (clamp || mode == 1 || (!d->normalized_coords && mode != 3))) {
            double top = (double)d->size[k] - 0.5;
            u[k] = u[k] < 0.5 ? 0.5 : (u[k] > top ? top : u[k]);
        }
        double b = u[k] - 0.5;
        double f = floor(b);
        i[k] = (int)f;
        q[k] = (int)floor((b - f) * 256.0 + 0.5);
    }
    weights(q, axes, w, all);
    int corners = 1 << axes;
    for (int n = 0; n < corners; ++n)
        stored_texel(d, i[0] + (n & 1), i[1] + ((n >> 1) & 1), i[2] + ((n >> 2) & 1), layer, v[n]);
    return corners;
}

static __device__ Texel filtered(const Descriptor *d, double (*v)[4], const int *w, int corners) {
    Texel out;
    for (int c = 0; c < 4; ++c)
        out.v[c] = __float_as_uint(d->kind == 2 ? filter_float(v, w, corners, c, d->bits == 16)
                                                : filter_normalized(d, v, w, corners, c));
    return out;
}

static __device__ Texel sample_linear(const Descriptor *d, double *u, int dims, int layer,
                                      bool clamp) {
    int w[8];
    double v[8][4];
    return filtered(d, v, w, footprint(d, u, dims, layer, clamp, 256, w, v));
}

// The face of a cube map fetch, as the CUDA C++ Programming Guide's "Cubemap Textures"
// defines it, and its texel coordinates u: the
// face of the major axis of the direction (x, y, z) (ties go to z, then y, as on the H100)
// and the face coordinates ((s / m + 1) / 2, (t / m + 1) / 2) of its table, read as a 2D
// texture with normalized coordinates clamped to the face (no filtering across faces:
// seamlessCubemap off). Every cube fetch of texture_check on an H100 agrees (docs/textures.md).
static __device__ int cube_face(const Descriptor *d, float x, float y, float z, double *u) {
    float ax = fabsf(x), ay = fabsf(y), az = fabsf(z);
    int face;
    float m, s, t;
    if (az >= ax && az >= ay) {
        face = z >= 0.0f ? 4 : 5, m = az, s = z >= 0.0f ? x : -x, t = -y;
    } else if (ay >= ax) {
        face = y >= 0.0f ? 2 : 3, m = ay, s = x, t = y >= 0.0f ? z : -z;
    } else {
        face = x >= 0.0f ? 0 : 1, m = ax, s = x >= 0.0f ? -z : z, t = -y;
    }
    float face_uv[2] = {m > 0.0f ? (s / m + 1.0f) * 0.5f : 0.5f,
                        m > 0.0f ? (t / m + 1.0f) * 0.5f : 0.5f};
    for (int k = 0; k < 2; ++k)
        u[k] = floor((double)face_uv[k] * 16777216.0) * (1.0 / 16777216.0) * (double)d->size[k];
    return face;
}

static __device__ Texel sample_cube(const Descriptor *d, float x, float y, float z, int cube) {
    double u[3] = {0.0, 0.0, 0.0};
    int layer = 6 * cube + cube_face(d, x, y, z, u);
    if (d->filter == 1 && returns_float(d)) return sample_linear(d, u, 2, layer, true);
    int i[2];
    for (int k = 0; k < 2; ++k) {
        i[k] = (int)floor(u[k]);
        i[k] = i[k] < 0 ? 0 : (i[k] >= (int)d->size[k] ? (int)d->size[k] - 1 : i[k]);
    }
    return __ptxport_fetch(d, i[0], i[1], 0, layer);
}

static __device__ __noinline__ Texel sample(const Descriptor *d, unsigned int op, unsigned int c0,
                                             unsigned int c1, unsigned int c2,
                                             unsigned int layer) {
    int dims = (int)(op & OP_DIMS);
    int l = (op & OP_LAYERED) ? layer_index(d, layer) : 0;
    unsigned int c[3] = {c0, c1, c2};
    if (op & OP_CUBE) {
        int last = (int)d->layers / 6 - 1, cube = (op & OP_LAYERED) ? (int)layer : 0;
        cube = cube > last ? last : cube;
        return sample_cube(d, __uint_as_float(c0), __uint_as_float(c1), __uint_as_float(c2),
                           cube < 0 ? 0 : cube);
    }
    if (op & OP_INTEGER)
        return __ptxport_fetch(d, (int)c0, dims > 1 ? (int)c1 : 0, dims > 2 ? (int)c2 : 0, l);
    double u[3] = {0.0, 0.0, 0.0};
    for (int k = 0; k < dims; ++k) u[k] = texel_coordinate(d, __uint_as_float(c[k]), k);
    if (d->filter == 1 && returns_float(d)) return sample_linear(d, u, dims, l, false);
    return __ptxport_fetch(d, (int)floor(u[0]), (int)floor(u[1]), (int)floor(u[2]), l);
}

extern "C" __device__ __noinline__ Texel __ptxport_tex(unsigned long long handle, unsigned int op,
                                                      unsigned int c0, unsigned int c1,
                                                      unsigned int c2, unsigned int layer) {
    return sample(descriptor(handle), op, c0, c1, c2, layer);    // level 0 of a mipmap
}

// Trilinear filtering of 1D, 2D and cube map textures, as the H100 does it: the two levels'
// footprints (linear filtering's 2 x 2 texels, or point filtering's one) are the two z slices
// of a 3D texture's filter, weighing 256 - q and q, each split by its own level's fractions;
// float texels cut per slice and summed exactly (filter_float). Every tex2DLod fetch of
// benchmarks/texture_cuda_check.py on an H100 agrees (docs/textures.md).
static __device__ Texel trilinear(const Descriptor *low, const Descriptor *high, int q,
                                  unsigned int op, const unsigned int *c, unsigned int layer) {
    int w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double v[8][4];
    for (int s = 0; s < 2; ++s) {
        const Descriptor *d = s ? high : low;
        double u[3] = {0.0, 0.0, 0.0};
        int dims = 2, l;
        bool cube = (op & OP_CUBE) != 0;
        if (cube) {
            int last = (int)d->layers / 6 - 1, n = (op & OP_LAYERED) ? (int)layer : 0;
            n = n > last ? last : (n < 0 ? 0 : n);
            l = 6 * n + cube_face(d, __uint_as_float(c[0]), __uint_as_float(c[1]),
                                  __uint_as_float(c[2]), u);
        } else {
            dims = (int)(op & OP_DIMS);
            l = (op & OP_LAYERED) ? layer_index(d, layer) : 0;
            for (int k = 0; k < dims; ++k) u[k] = texel_coordinate(d, __uint_as_float(c[k]), k);
        }
        int all = s ? q : 256 - q;
        if (d->filter == 1) {
            footprint(d, u, dims, l, cube, all, w + 4 * s, v + 4 * s);
            continue;
        }
        int i[2];
        for (int k = 0; k < 2; ++k) {
            i[k] = (int)floor(u[k]);
            if (cube) i[k] = i[k] < 0 ? 0 : (i[k] >= (int)d->size[k] ? (int)d->size[k] - 1 : i[k]);
        }
        stored_texel(d, i[0], i[1], 0, l, v[4 * s]);
        w[4 * s] = all;
        for (int n = 1; n < 4; ++n) stored_texel(d, i[0], i[1], 0, l, v[4 * s + n]);
    }
    return filtered(low, v, w, 8);
}

// A fetch at level of detail `lod` (tex.level; tex.grad's computed one): lod + the bias,
// clamped to [min, max] MipmapLevelClamp and to the levels. Point mipmap filtering reads the
// nearest level (ties up); linear filtering weighs the two levels around it by the fraction
// cut to 8 bits, q/256, in one trilinear filter (3D textures and integer coordinates: the two
// levels' results blended, q/256 of the upper, rounded once; not measured). Every tex2DLod
// fetch of an H100 in benchmarks/texture_cuda_check.py agrees.
static __device__ Texel sample_level(const Descriptor *d, unsigned int op, unsigned int c0,
                                     unsigned int c1, unsigned int c2, unsigned int layer,
                                     float lod) {
    if (d->levels == 0) return sample(d, op, c0, c1, c2, layer);   // no mipmaps: level 0
    float l = lod + d->lod_bias;
    l = l > d->max_lod ? d->max_lod : l;
    l = l < d->min_lod ? d->min_lod : l;
    float last = (float)(d->levels - 1);
    l = l != l || l < 0.0f ? 0.0f : (l > last ? last : l);
    const Descriptor *table = descriptor(d->level_table);
    if (d->mip_filter == 0 || !returns_float(d)) {
        return sample(&table[(int)floorf(l + 0.5f)], op, c0, c1, c2, layer);
    }
    int level = (int)floorf(l);
    int q = (int)floorf((l - (float)level) * 256.0f);    // cut, not rounded (the H100)
    Texel low = sample(&table[level], op, c0, c1, c2, layer);
    if (q == 0) return low;
    int next = level + 1 < (int)d->levels ? level + 1 : level;
    unsigned int c[3] = {c0, c1, c2};
    if ((op & OP_CUBE) || ((op & OP_DIMS) < 3 && !(op & OP_INTEGER)))
        return trilinear(&table[level], &table[next], q, op, c, layer);
    Texel high = sample(&table[next], op, c0, c1, c2, layer);
    Texel out;
    for (int c = 0; c < 4; ++c) {
        double a = (double)__uint_as_float(low.v[c]), b = (double)__uint_as_float(high.v[c]);
        out.v[c] = __float_as_uint((float)((a * (256 - q) + b * q) * (1.0 / 256.0)));
    }
    return out;
}

extern "C" __device__ __noinline__ Texel __ptxport_tex_level(
        unsigned long long handle, unsigned int op, unsigned int c0, unsigned int c1,
        unsigned int c2, unsigned int layer, float lod) {
    return sample_level(descriptor(handle), op, c0, c1, c2, layer, lod);
}

// tex.grad: the level of detail of the gradients dP/dx and dP/dy, log2 of the longer one's
// length in level 0's texels, in 8 fractional bits as fitted to an H100: the exponent of the
// length, and log2 of the midpoint of its significand's top 8 bits rounded to 1/256 (a
// 256-entry table), 0 for a power of two (benchmarks/texture_cuda_check.py, docs/textures.md).
static __device__ float gradient_lod(float rho) {
    if (!(rho > 0.0f)) return -1000.0f;
    unsigned int bits = __float_as_uint(rho);
    int e = (int)((bits >> 23) & 0xffu) - 127;
    if ((bits & 0x7fffffu) == 0) return (float)e;
    float top = (float)((bits >> 15) & 0xffu);
    float t = rintf(256.0f * log2f(1.0f + (top + 0.5f) * (1.0f / 256.0f)));
    return (float)e + t * (1.0f / 256.0f);
}

extern "C" __device__ __noinline__ Texel __ptxport_tex_grad(
        unsigned long long handle, unsigned int op, unsigned int c0, unsigned int c1,
        unsigned int c2, unsigned int layer, float dx0, float dx1, float dx2, float dy0,
        float dy1, float dy2) {
    const Descriptor *d = descriptor(handle);
    int dims = (op & OP_CUBE) ? 2 : (int)(op & OP_DIMS);
    float dx[3] = {dx0, dx1, dx2}, dy[3] = {dy0, dy1, dy2};
    float x2 = 0.0f, y2 = 0.0f;
    for (int k = 0; k < dims; ++k) {
        float scale = d->normalized_coords ? (float)d->size[k] : 1.0f;
        x2 += dx[k] * scale * dx[k] * scale;
        y2 += dy[k] * scale * dy[k] * scale;
    }
    float lod = gradient_lod(sqrtf(x2 > y2 ? x2 : y2));
    return sample_level(d, op, c0, c1, c2, layer, lod);
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

// tld4.comp.cube: the footprint of tld4.2d on the face the direction (x, y, z) selects (as
// texCubemap does), clamped to the face: no texels of the neighbouring faces
// (seamlessCubemap off). `cube`: the cube of a cube map array (tld4.acube).
extern "C" __device__ __noinline__ Texel __ptxport_tld4_cube(
        unsigned long long handle, unsigned int op, unsigned int comp, float x, float y,
        float z, unsigned int cube) {
    const Descriptor *d = descriptor(handle);
    int last = (int)d->layers / 6 - 1, c = (op & OP_LAYERED) ? (int)cube : 0;
    c = c > last ? last : (c < 0 ? 0 : c);
    double u[3] = {0.0, 0.0, 0.0};
    int layer = 6 * c + cube_face(d, x, y, z, u);
    int i = (int)floor(u[0] - 0.5), j = (int)floor(u[1] - 0.5);
    const int di[4] = {0, 1, 1, 0}, dj[4] = {1, 1, 0, 0};
    Texel out;
    for (int n = 0; n < 4; ++n) {
        int xi = i + di[n], yj = j + dj[n], top = (int)d->size[0] - 1;
        xi = xi < 0 ? 0 : (xi > top ? top : xi);
        yj = yj < 0 ? 0 : (yj > top ? top : yj);
        out.v[n] = __ptxport_fetch(d, xi, yj, 0, layer).v[comp];
    }
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
static __device__ unsigned int query_of(const Descriptor *d, unsigned int query) {
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
    case 9: return d->levels;   // num_mipmap_levels (0 without mipmaps)
    default: return 0;
    }
}

extern "C" __device__ __noinline__ unsigned int __ptxport_query(unsigned long long handle,
                                                               unsigned int query) {
    return query_of(descriptor(handle), query);
}

// txq.level: the width, height or depth of mipmap level `level` (clamped to the levels; of
// level 0 for a texture without mipmaps).
extern "C" __device__ __noinline__ unsigned int __ptxport_query_level(
        unsigned long long handle, unsigned int query, int level) {
    const Descriptor *d = descriptor(handle);
    if (d->levels > 0 && level > 0) {
        int last = (int)d->levels - 1;
        d = &descriptor(d->level_table)[level > last ? last : level];
    }
    return query_of(d, query);
}
