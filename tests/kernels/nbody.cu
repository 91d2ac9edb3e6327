// nbody.cu: one step of an all-pairs gravitational n-body simulation in single precision,
// tiled through shared memory as in GPU Gems 3 ch. 31, followed by a leapfrog update.
//
// nbody_step(const float4* pos_mass, float4* new_pos_mass, float3* vel, int n, float dt,
//            float softening2)
//   launch: grid = ((n + 127) / 128,), block = (128,), dynamic shared = 0 (block must be 128)
//   pos_mass[j] = (x, y, z, m). For body i < n:
//   a_i = sum over all j in order 0..n-1 (including j = i, whose term is 0) of
//         m_j * d / (|d|^2 + softening2)^(3/2), d = p_j - p_i,
//   with inv = rsqrtf(|d|^2 + softening2), computed as s = m_j * inv*inv*inv and a += d * s
//   (rsqrtf is approximate: compare with a relative tolerance of ~1e-4);
//   vel[i] += a_i * dt; new_pos_mass[i] = (p_i + vel[i] * dt, m_i)

#define TILE 128

extern "C" __global__ void nbody_step(const float4* pos_mass, float4* new_pos_mass, float3* vel,
                                      int n, float dt, float softening2)
{
    __shared__ float4 tile[TILE];
    int i = blockIdx.x * TILE + threadIdx.x;
    float4 pi = i < n ? pos_mass[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float3 acc = make_float3(0.0f, 0.0f, 0.0f);
    for (int base = 0; base < n; base += TILE) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos_mass[j] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
        int count = min(TILE, n - base);
        for (int k = 0; k < count; ++k) {
            float4 pj = tile[k];
            float dx = pj.x - pi.x, dy = pj.y - pi.y, dz = pj.z - pi.z;
            float dist2 = dx * dx + dy * dy + dz * dz + softening2;
            float inv = rsqrtf(dist2);
            float s = pj.w * inv * inv * inv;
            acc.x += dx * s;
            acc.y += dy * s;
            acc.z += dz * s;
        }
        __syncthreads();
    }
    if (i >= n)
        return;
    float3 v = vel[i];
    v.x += acc.x * dt;
    v.y += acc.y * dt;
    v.z += acc.z * dt;
    vel[i] = v;
    new_pos_mass[i] = make_float4(pi.x + v.x * dt, pi.y + v.y * dt, pi.z + v.z * dt, pi.w);
}
