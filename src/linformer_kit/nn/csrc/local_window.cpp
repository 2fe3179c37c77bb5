// The window's forward on a CPU in one pass ("native", nn/local_native.py, which says what and why; the
// reference and the formula are nn/local.py's). float32, inference only.
//
// A task: row r, head hh, queries [i0, i0 + nq). Its queries go in tiles of TQ = V (one vector: a query a
// lane). A tile's scores are one vector a key (`key_scores`: the tile's scaled queries transposed, qt (D, V),
// against KB keys read in place, a broadcast element of a key each), st (S + V + 2w, V): the S shared keys,
// then band key j at position ia - w + j, which lane a may read when j - 2w <= a <= j (|i - p| <= w). Masked
// scores are -inf; max, exp and sum go lane by lane; `weigh` adds p times the value rows, QP queries at a time.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>

namespace {

#if defined(__AVX512F__)
constexpr int V = 16;  // floats a vector: one register of this build's instruction set
constexpr int ACC = 16;  // vector accumulators of the output micro-kernel (`weigh`): QP queries x D / V vectors
#elif defined(__AVX__)
constexpr int V = 8;
constexpr int ACC = 8;
#else
constexpr int V = 4;
constexpr int ACC = 8;
#endif
typedef float vf __attribute__((vector_size(V * 4)));
typedef float vfu __attribute__((vector_size(V * 4), aligned(4)));  // an unaligned load or store
typedef int vi __attribute__((vector_size(V * 4)));
constexpr int TQ = V;  // queries a tile: a lane each

#define INLINE inline __attribute__((always_inline))

INLINE vf splat(float x) { return vf{} + x; }

// exp(x) for x <= 0, Cephes' expf (about 1 ulp); x < -87.3 -> 0, so -inf -> 0
INLINE vf vexp(vf x) {
  const vi under = x < splat(-87.3f);
  x = x < splat(-87.3f) ? splat(-87.3f) : x;
  const vf n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x / ln 2)
  x = x - n * 0.693359375f - n * -2.12194440e-4f;
  const vf z = x * x;
  vf y = splat(1.9875691500e-4f);
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  const vi scale = (__builtin_convertvector(n, vi) + 127) << 23;  // 2^n
  return (vf)((vi)(y * (vf)scale) & ~under);
}

struct Buffer {  // 64-byte aligned floats, one a thread
  float* p;
  explicit Buffer(int64_t n) : p(static_cast<float*>(std::aligned_alloc(64, ((n * 4 + 63) / 64) * 64))) {}
  ~Buffer() { std::free(p); }
};

struct Task {  // one task's inputs (a row, a head, up to block_size queries); strides in floats
  const float *q, *sk, *sv, *k, *v;  // first query; shared keys, values; the row's K, V at position 0
  // the stride between consecutive positions (`_sn`) of the queries, the shared keys and values, the band's
  // keys and values (K, V: the row's own), and the output
  int64_t q_sn, s_sn, b_sn, o_sn;
  const bool *shared_ok, *key_ok;  // (S) and (n) from position 0, or null: every key
  float* out;  // the block's first output row
  int S, nq, i0, g, n, w;
  float scale;
};

constexpr int floor_pow2(int x) { return x < 2 ? 1 : 2 * floor_pow2(x / 2); }

// scores of the tile's queries (one vector, a lane a query) against KB keys from `key`: st[u] = qt . key u
template <int D, int KB>
INLINE void key_scores(const float* qt, const float* key, int64_t sn, float* st) {
  vf acc[KB];
  for (int u = 0; u < KB; ++u) acc[u] = splat(0.f);
  for (int c = 0; c < D; ++c) {
    const vf qc = *(const vf*)(qt + c * V);
    for (int u = 0; u < KB; ++u) acc[u] += key[u * sn + c] * qc;
  }
  for (int u = 0; u < KB; ++u) *(vf*)(st + u * V) = acc[u];
}

template <int D>
INLINE void scores(const float* qt, const float* key, int64_t sn, int count, float* st) {
  constexpr int KB = 8;  // keys a micro-kernel: KB accumulators
  int j = 0;
  for (; j + KB <= count; j += KB) key_scores<D, KB>(qt, key + j * sn, sn, st + j * V);
  for (; j < count; ++j) key_scores<D, 1>(qt, key + j * sn, sn, st + j * V);
}

// acc (QP queries, DV vectors) += p (lanes a0 + [0, QP) of score vectors [j0, j1)) times value rows [j0, j1)
template <int DV, int QP>
INLINE void weigh(vf (*acc)[DV], const float* st, int a0, const float* val, int64_t sn, int j0, int j1) {
  for (int j = j0; j < j1; ++j) {
    const float* row = val + (int64_t)j * sn;
    vf x[DV];
    for (int e = 0; e < DV; ++e) x[e] = *(const vfu*)(row + e * V);
    for (int a = 0; a < QP; ++a) {
      const float p = st[j * V + a0 + a];
      for (int e = 0; e < DV; ++e) acc[a][e] += p * x[e];
    }
  }
}

template <int D>
void block(const Task& t, float* qt, float* st) {
  constexpr int DV = D / V;  // vectors a key or value row
  // queries an output micro-kernel: as many as ACC accumulators hold (a power of 2, so they divide TQ)
  constexpr int QP = floor_pow2(ACC / DV);
  const float ninf = -std::numeric_limits<float>::infinity();
  const int S = t.S, W = TQ + 2 * t.w;  // shared keys; band keys a tile
  float* band = st + S * V;  // score vectors: [0, S) shared keys, S + j the band's key j
  vi lane;
  for (int a = 0; a < V; ++a) lane[a] = a;
  for (int t0 = 0; t0 < t.nq; t0 += TQ) {
    const int nt = t.nq - t0 < TQ ? t.nq - t0 : TQ, ia = t.i0 + t0;
    for (int c = 0; c < D; ++c)  // qt (D, TQ): the tile's queries, scaled, a lane each
      for (int a = 0; a < TQ; ++a) qt[c * V + a] = a < nt ? t.q[(int64_t)(t0 + a) * t.q_sn + c] * t.scale : 0.f;
    scores<D>(qt, t.sk, t.s_sn, S, st);
    if (t.shared_ok)
      for (int j = 0; j < S; ++j)
        if (!t.shared_ok[j]) *(vf*)(st + j * V) = splat(ninf);
    // the band: key j at position p = ia - w + j, which query lane a may read when j - 2w <= a <= j
    const int j0 = std::max(0, t.g - (ia - t.w)), j1 = std::min(W, t.n - (ia - t.w));  // keys in [g, n): nn/keys.py past_globals
    for (int j = 0; j < j0; ++j) *(vf*)(band + j * V) = splat(ninf);
    for (int j = std::max(j1, j0); j < W; ++j) *(vf*)(band + j * V) = splat(ninf);
    if (j1 > j0) scores<D>(qt, t.k + (int64_t)(ia - t.w + j0) * t.b_sn, t.b_sn, j1 - j0, band + j0 * V);
    vf top = splat(ninf);
    for (int j = 0; j < S; ++j) top = *(vf*)(st + j * V) > top ? *(vf*)(st + j * V) : top;
    for (int j = j0; j < j1; ++j) {
      vf x = *(vf*)(band + j * V);
      const bool key = !t.key_ok || t.key_ok[ia - t.w + j];
      x = key && (lane >= j - 2 * t.w) && (lane <= j) ? x : splat(ninf);
      *(vf*)(band + j * V) = x;
      top = x > top ? x : top;
    }
    const vf shift = top == splat(ninf) ? splat(0.f) : top;  // no key: every exp is 0, the output 0
    vf total = splat(0.f);
    for (int j = 0; j < S; ++j) total += *(vf*)(st + j * V) = vexp(*(vf*)(st + j * V) - shift);
    for (int j = j0; j < j1; ++j) total += *(vf*)(band + j * V) = vexp(*(vf*)(band + j * V) - shift);
    float inv[V];
    *(vfu*)inv = total > splat(0.f) ? 1.f / total : splat(0.f);
    for (int a0 = 0; a0 < nt; a0 += QP) {
      vf acc[QP][DV];
      for (int a = 0; a < QP; ++a)
        for (int e = 0; e < DV; ++e) acc[a][e] = splat(0.f);
      weigh<DV, QP>(acc, st, a0, t.sv, t.s_sn, 0, S);
      // the sub-tile's band keys, j in [a0, a0 + QP + 2w), those in [g, n)
      const int b0 = std::max(a0, j0), b1 = std::min(a0 + QP + 2 * t.w, j1);
      weigh<DV, QP>(acc, band, a0, t.v + (int64_t)(ia - t.w) * t.b_sn, t.b_sn, b0, b1);
      for (int a = 0; a < QP && a0 + a < nt; ++a)
        for (int e = 0; e < DV; ++e)
          *(vfu*)(t.out + (int64_t)(t0 + a0 + a) * t.o_sn + e * V) = acc[a][e] * inv[a0 + a];
    }
  }
}

std::string shape(const at::Tensor& x) {
  std::ostringstream out;
  out << x.sizes() << " strides " << x.strides();
  return out.str();
}

// Every size, stride and dtype the kernel reads, checked before any is read (a ValueError in Python, naming the
// tensor and its shape): q, k, v (b, h, n, d) with the same sizes, keys and values (b, h, S, d), d a multiple
// of 16 up to 128, unit stride in d, v's and values' position stride k's and keys', shared_ok broadcast to
// (b, h, 1, S), key_ok (b, n); every tensor on the CPU.
void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keys,
                  const at::Tensor& values, const c10::optional<at::Tensor>& shared_ok,
                  const c10::optional<at::Tensor>& key_ok, int64_t w, int64_t g, int64_t block_size) {
  const char* names[] = {"q", "k", "v", "keys", "values"};
  const at::Tensor* xs[] = {&q, &k, &v, &keys, &values};
  for (int i = 0; i < 5; ++i) {
    const at::Tensor& x = *xs[i];
    TORCH_CHECK_VALUE(x.device().is_cpu() && x.scalar_type() == at::kFloat && x.dim() == 4,
                      "local_window: ", names[i], " must be a float32 CPU tensor (b, h, n, d), got ",
                      x.scalar_type(), " on ", x.device(), " of ", x.dim(), " dims");
    TORCH_CHECK_VALUE(x.stride(3) == 1, "local_window: ", names[i], " needs unit stride in d, got ", shape(x));
  }
  const int64_t d = q.size(3);
  TORCH_CHECK_VALUE(d > 0 && d % 16 == 0 && d <= 128, "local_window: the head size must be a multiple of 16 up to 128, "
                    "got q ", shape(q));
  for (int i = 1; i < 3; ++i)
    TORCH_CHECK_VALUE(xs[i]->sizes() == q.sizes(), "local_window: ", names[i], " must have q's sizes ",
                      q.sizes(), ", got ", shape(*xs[i]));
  for (int i = 3; i < 5; ++i)
    TORCH_CHECK_VALUE(xs[i]->size(0) == q.size(0) && xs[i]->size(1) == q.size(1) && xs[i]->size(3) == d &&
                      xs[i]->size(2) == keys.size(2),
                      "local_window: ", names[i], " must be (b, h, S, d) = (", q.size(0), ", ", q.size(1), ", ",
                      keys.size(2), ", ", d, "), got ", shape(*xs[i]));
  TORCH_CHECK_VALUE(v.stride(2) == k.stride(2), "local_window: v's position stride must be k's (",
                    k.stride(2), "), got v ", shape(v));
  TORCH_CHECK_VALUE(values.stride(2) == keys.stride(2), "local_window: values' position stride must be keys' (",
                    keys.stride(2), "), got values ", shape(values));
  TORCH_CHECK_VALUE(w >= 0 && g >= 0 && block_size > 0 && block_size % 16 == 0,
                    "local_window: w >= 0, g >= 0 and a block of a positive multiple of 16, got w ", w, ", g ",
                    g, ", block ", block_size);
  TORCH_CHECK_VALUE(g <= q.size(2), "local_window: g ", g, " must be at most n ", q.size(2));
  if (shared_ok) {
    const at::Tensor& m = *shared_ok;
    const int64_t S = keys.size(2);
    TORCH_CHECK_VALUE(m.scalar_type() == at::kBool && m.device().is_cpu() && m.dim() == 4 &&
                      (m.size(0) == 1 || m.size(0) == q.size(0)) && (m.size(1) == 1 || m.size(1) == q.size(1)) &&
                      m.size(2) == 1 && (m.size(3) == 1 || m.size(3) == S),
                      "local_window: shared_ok must be a bool CPU tensor broadcast to (b, h, 1, S) = (",
                      q.size(0), ", ", q.size(1), ", 1, ", S, "), got ", m.scalar_type(), " ", shape(m));
  }
  if (key_ok) {
    const at::Tensor& m = *key_ok;
    TORCH_CHECK_VALUE(m.scalar_type() == at::kBool && m.device().is_cpu() && m.dim() == 2 &&
                      m.size(0) == q.size(0) && m.size(1) == q.size(2),
                      "local_window: key_ok must be a bool CPU tensor (b, n) = (", q.size(0), ", ", q.size(2),
                      "), got ", m.scalar_type(), " ", shape(m));
  }
}

at::Tensor window(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keys,
                  const at::Tensor& values, const c10::optional<at::Tensor>& shared_ok,
                  const c10::optional<at::Tensor>& key_ok, int64_t w, int64_t g, int64_t block_size, double scale) {
  check_inputs(q, k, v, keys, values, shared_ok, key_ok, w, g, block_size);
  const int64_t b = q.size(0), h = q.size(1), n = q.size(2), d = q.size(3), S = keys.size(2);
  w = std::min(w, n);  // a band past n reads what w = n reads (and its buffer stays n-sized)
  at::Tensor out = at::empty({b, n, h, d}, q.options());
  const at::Tensor sok = shared_ok ? shared_ok->expand({b, h, 1, S}).contiguous() : at::Tensor();
  const at::Tensor kok = key_ok ? key_ok->contiguous() : at::Tensor();
  const int64_t blocks = (n + block_size - 1) / block_size;
  at::parallel_for(0, b * h * blocks, 1, [&](int64_t begin, int64_t end) {
    Buffer qt(d * TQ), st((S + TQ + 2 * w) * V);
    TORCH_CHECK(qt.p && st.p, "local_window: out of memory for a thread's ", (S + TQ + 2 * w) * V, " scores");
    for (int64_t task = begin; task < end; ++task) {
      const int64_t r = task / (h * blocks), hh = task / blocks % h, i0 = task % blocks * block_size;
      Task t;
      t.S = (int)S, t.nq = (int)std::min(block_size, n - i0), t.i0 = (int)i0;
      t.g = (int)g, t.n = (int)n, t.w = (int)w, t.scale = (float)scale;
      t.q = q.data_ptr<float>() + r * q.stride(0) + hh * q.stride(1) + i0 * q.stride(2), t.q_sn = q.stride(2);
      t.sk = keys.data_ptr<float>() + r * keys.stride(0) + hh * keys.stride(1), t.s_sn = keys.stride(2);
      t.sv = values.data_ptr<float>() + r * values.stride(0) + hh * values.stride(1);
      t.k = k.data_ptr<float>() + r * k.stride(0) + hh * k.stride(1), t.b_sn = k.stride(2);
      t.v = v.data_ptr<float>() + r * v.stride(0) + hh * v.stride(1);
      t.shared_ok = shared_ok ? sok.data_ptr<bool>() + (r * h + hh) * S : nullptr;
      t.key_ok = key_ok ? kok.data_ptr<bool>() + r * n : nullptr;
      t.out = out.data_ptr<float>() + (r * n + i0) * h * d + hh * d, t.o_sn = h * d;
      switch (d) {
        case 16: block<16>(t, qt.p, st.p); break;
        case 32: block<32>(t, qt.p, st.p); break;
        case 48: block<48>(t, qt.p, st.p); break;
        case 64: block<64>(t, qt.p, st.p); break;
        case 80: block<80>(t, qt.p, st.p); break;
        case 96: block<96>(t, qt.p, st.p); break;
        case 112: block<112>(t, qt.p, st.p); break;
        default: block<128>(t, qt.p, st.p); break;
      }
    }
  });
  return out.transpose(1, 2);
}

}  // namespace

TORCH_LIBRARY(linformer_kit_native, m) {
  m.def("local_window(Tensor q, Tensor k, Tensor v, Tensor keys, Tensor values, Tensor? shared_ok, "
        "Tensor? key_ok, int w, int g, int block_size, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(linformer_kit_native, CPU, m) { m.impl("local_window", &window); }
