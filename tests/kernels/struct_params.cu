// struct_params.cu: kernels taking structs by value, whose members have mixed sizes and
// alignments (char, short, int, double, pointers, a nested struct, an array), so that the
// .param layout has padding and 8-byte alignment; plus a struct with an explicit alignment.
// Layouts are the C ABI's (x86-64 / PTX agree): offsets are written beside each member.
//
// struct Params { char tag; /*1 pad*/ short scale; /*@2*/ int count; /*@4*/ double bias; /*@8*/
//                 float* out; /*@16*/ struct { unsigned char r, g, b; } rgb; /*@24*/
//                 /*1 pad*/ short weights[3]; /*@28*/ /*2 pad*/ long long offset; /*@40*/ }
//   sizeof 48, alignof 8
// struct_apply(Params p, const float* in)
//   launch: grid = ((p.count + 127) / 128,), block = (128,), dynamic shared = 0
//   for i < p.count: p.out[i] = in[i] * p.scale + (float)p.bias + p.tag
//                    + (p.rgb.r + p.rgb.g + p.rgb.b) + p.weights[i % 3] + (float)(p.offset + i)
//   (each term converted to float and added left to right)
// struct Vec3Pair { float3 a; /*@0*/ float3 b; /*@12*/ }  (sizeof 24, alignof 4)
// struct __align__(16) Aligned16 { int k; /*@0*/ /*12 pad*/ float4 v; /*@16*/ }  (sizeof 32)
// struct_small(Vec3Pair pair, Aligned16 al, char c, double* out)
//   launch: grid = (1,), block = (1,), dynamic shared = 0
//   out[0] = dot(pair.a, pair.b); out[1..3] = cross(pair.a, pair.b) (a.y*b.z - a.z*b.y, ...);
//   out[4] = al.k * (al.v.x + al.v.y + al.v.z + al.v.w); out[5] = c (sign-extended char);
//   the float results computed in float (products contracted to fma), then widened to double

struct Rgb {
    unsigned char r, g, b;
};

struct Params {
    char tag;
    short scale;
    int count;
    double bias;
    float* out;
    Rgb rgb;
    short weights[3];
    long long offset;
};

struct Vec3Pair {
    float3 a;
    float3 b;
};

struct __align__(16) Aligned16 {
    int k;
    float4 v;
};

static_assert(sizeof(Params) == 48, "Params layout");
static_assert(sizeof(Vec3Pair) == 24, "Vec3Pair layout");
static_assert(sizeof(Aligned16) == 32, "Aligned16 layout");

extern "C" __global__ void struct_apply(Params p, const float* in)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.count)
        return;
    float v = in[i] * p.scale;
    v += (float)p.bias;
    v += p.tag;
    v += p.rgb.r + p.rgb.g + p.rgb.b;
    v += p.weights[i % 3];
    v += (float)(p.offset + i);
    p.out[i] = v;
}

extern "C" __global__ void struct_small(Vec3Pair pair, Aligned16 al, char c, double* out)
{
    float3 a = pair.a, b = pair.b;
    out[0] = a.x * b.x + a.y * b.y + a.z * b.z;
    out[1] = a.y * b.z - a.z * b.y;
    out[2] = a.z * b.x - a.x * b.z;
    out[3] = a.x * b.y - a.y * b.x;
    out[4] = al.k * (al.v.x + al.v.y + al.v.z + al.v.w);
    out[5] = c;
}
