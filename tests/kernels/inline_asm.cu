// inline_asm.cu: inline PTX in CUDA C++, so the PTX holds instructions and special registers
// that C++ does not produce directly: %laneid, %lanemask_lt, lop3.b32 with an arbitrary truth
// table, bfe/bfi bit-field instructions, prmt with a mode, and a predicate computed in asm.
//
// asm_lane_info(unsigned* out, int n)
//   launch: grid = (n / 64,), block = (64,), dynamic shared = 0; n a multiple of 64
//   out[3i + 0] = %laneid (= threadIdx.x % 32 for 1D blocks); out[3i + 1] = %lanemask_lt
//   (bits below the lane set); out[3i + 2] = popc(ballot of odd i & %lanemask_lt), the count
//   of odd-indexed lanes below this one (lane / 2 for full warps)
// asm_bit_ops(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n)
//   launch: grid = ((n + 255) / 256,), block = (256,), dynamic shared = 0
//   out[k*n + i]: k=0 lop3.b32 with table 0x96 = a ^ b ^ c; k=1 lop3 with 0xE8 = majority(a,
//   b, c); k=2 bfe.u32(a, 4, 12) = (a >> 4) & 0xfff; k=3 bfe.s32(a, 4, 12) = the same field
//   sign-extended from bit 11; k=4 bfi.b32(b, a, 8, 8) = a with bits 8..15 replaced by b's
//   low byte; k=5 prmt.b32.f4e(a, b, c & 7) (forward 4 extract: bytes s, s+1, s+2, s+3 of the
//   8 bytes b:a, with s = c & 3: the mode reads only the selector's two low bits);
//   k=6 1 if a > b (unsigned) via setp/selp in asm, else 0

extern "C" __global__ void asm_lane_info(unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane, lt;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    unsigned odd = __ballot_sync(0xffffffffu, i & 1);
    out[3 * i + 0] = lane;
    out[3 * i + 1] = lt;
    out[3 * i + 2] = __popc(odd & lt);
}

extern "C" __global__ void asm_bit_ops(const unsigned* a, const unsigned* b, const unsigned* c,
                                       unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = a[i], y = b[i], z = c[i], r;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    out[0 * n + i] = r;
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(r) : "r"(x), "r"(y), "r"(z));
    out[1 * n + i] = r;
    asm("bfe.u32 %0, %1, 4, 12;" : "=r"(r) : "r"(x));
    out[2 * n + i] = r;
    int s;
    asm("bfe.s32 %0, %1, 4, 12;" : "=r"(s) : "r"(x));
    out[3 * n + i] = (unsigned)s;
    asm("bfi.b32 %0, %1, %2, 8, 8;" : "=r"(r) : "r"(y), "r"(x));
    out[4 * n + i] = r;
    asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(z & 7));
    out[5 * n + i] = r;
    asm("{\n\t.reg .pred p;\n\tsetp.gt.u32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(r) : "r"(x), "r"(y));
    out[6 * n + i] = r;
}
