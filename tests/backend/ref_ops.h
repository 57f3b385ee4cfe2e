// Owns the plain scalar (double precision) reference implementations the backend ops are checked against.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace ninfer::testing::ref {

using Vec = std::vector<double>;

inline double silu(double x) { return x / (1.0 + std::exp(-x)); }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// y[M, N] = x[M, K] · w[N, K]ᵀ
inline Vec linear(const std::vector<float>& x, const std::vector<float>& w, int64_t M, int64_t N, int64_t K) {
  Vec y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0.0;
      for (int64_t k = 0; k < K; ++k) s += double(x[static_cast<size_t>(m * K + k)]) * w[static_cast<size_t>(n * K + k)];
      y[static_cast<size_t>(m * N + n)] = s;
    }
  return y;
}

inline Vec rms_norm(const std::vector<float>& x, const std::vector<float>& w, int64_t N, double eps, double off) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(N); ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < N; ++i) ss += double(x[r * N + i]) * x[r * N + i];
    const double inv = 1.0 / std::sqrt(ss / double(N) + eps);
    for (int64_t i = 0; i < N; ++i) y[r * N + i] = x[r * N + i] * inv * (w[static_cast<size_t>(i)] + off);
  }
  return y;
}

inline Vec gated_rms_norm(const std::vector<float>& x, const std::vector<float>& z, const std::vector<float>& w,
                          int64_t N, double eps) {
  Vec y = rms_norm(x, w, N, eps, 0.0);
  for (size_t i = 0; i < y.size(); ++i) y[i] *= silu(z[i]);
  return y;
}

inline Vec l2_norm(const std::vector<float>& x, int64_t N, double eps, double scale) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(N); ++r) {
    double ss = 0.0;
    for (int64_t i = 0; i < N; ++i) ss += double(x[r * N + i]) * x[r * N + i];
    for (int64_t i = 0; i < N; ++i) y[r * N + i] = x[r * N + i] * scale / std::sqrt(ss + eps);
  }
  return y;
}

// x [T, H, D], neox rotate-half on the first R dims.
inline Vec rope(const std::vector<float>& x, const std::vector<int32_t>& pos, int64_t H, int64_t D, int64_t R,
                double theta) {
  Vec y(x.begin(), x.end());
  const int64_t T = static_cast<int64_t>(pos.size()), half = R / 2;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double ang = pos[static_cast<size_t>(t)] * std::pow(theta, -2.0 * double(i) / double(R));
        const size_t b = static_cast<size_t>((t * H + h) * D);
        const double a0 = x[b + i], a1 = x[b + i + half];
        y[b + i] = a0 * std::cos(ang) - a1 * std::sin(ang);
        y[b + i + half] = a1 * std::cos(ang) + a0 * std::sin(ang);
      }
  return y;
}

// One sequence: q [n, nh, hd] at positions ctx−n .. ctx−1; k, v [ctx, nkv, hd] contiguous.
inline Vec attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t n,
                     int64_t ctx, int64_t nh, int64_t nkv, int64_t hd, double scale) {
  Vec out(static_cast<size_t>(n * nh * hd), 0.0);
  const int64_t G = nh / nkv;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = ctx - n + i;
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t kh = h / G;
      Vec s(static_cast<size_t>(pos + 1));
      double mx = -INFINITY;
      for (int64_t j = 0; j <= pos; ++j) {
        double d = 0.0;
        for (int64_t e = 0; e < hd; ++e)
          d += double(q[static_cast<size_t>((i * nh + h) * hd + e)]) * k[static_cast<size_t>((j * nkv + kh) * hd + e)];
        s[static_cast<size_t>(j)] = d * scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      double l = 0.0;
      for (auto& e : s) l += (e = std::exp(e - mx));
      for (int64_t j = 0; j <= pos; ++j)
        for (int64_t e = 0; e < hd; ++e)
          out[static_cast<size_t>((i * nh + h) * hd + e)] +=
              s[static_cast<size_t>(j)] / l * v[static_cast<size_t>((j * nkv + kh) * hd + e)];
    }
  }
  return out;
}

// Whole sequence, zero history: x [T, C], w [C, K].
inline Vec conv1d(const std::vector<float>& x, const std::vector<float>& w, int64_t T, int64_t C, int64_t K, bool act) {
  Vec y(static_cast<size_t>(T * C));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0.0;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t src = t - (K - 1) + j;
        if (src >= 0) s += double(w[static_cast<size_t>(c * K + j)]) * x[static_cast<size_t>(src * C + c)];
      }
      y[static_cast<size_t>(t * C + c)] = act ? silu(s) : s;
    }
  return y;
}

// Recurrent gated delta rule for one sequence; S [nv, dk, dv] in/out (double).
inline Vec delta_rule(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                      const std::vector<float>& g, const std::vector<float>& beta, Vec& S, int64_t T, int64_t nk,
                      int64_t nv, int64_t dk, int64_t dv) {
  Vec out(static_cast<size_t>(T * nv * dv));
  const int64_t G = nv / nk;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < nv; ++h) {
      const int64_t kh = h / G;
      double* s = S.data() + h * dk * dv;
      const float* qt = q.data() + (t * nk + kh) * dk;
      const float* kt = k.data() + (t * nk + kh) * dk;
      const float* vt = v.data() + (t * nv + h) * dv;
      const double decay = std::exp(double(g[static_cast<size_t>(t * nv + h)]));
      const double b = beta[static_cast<size_t>(t * nv + h)];
      for (int64_t i = 0; i < dk * dv; ++i) s[i] *= decay;
      for (int64_t j = 0; j < dv; ++j) {
        double mem = 0.0;
        for (int64_t i = 0; i < dk; ++i) mem += s[i * dv + j] * kt[i];
        const double u = b * (vt[j] - mem);
        for (int64_t i = 0; i < dk; ++i) s[i * dv + j] += kt[i] * u;
      }
      for (int64_t j = 0; j < dv; ++j) {
        double o = 0.0;
        for (int64_t i = 0; i < dk; ++i) o += s[i * dv + j] * qt[i];
        out[static_cast<size_t>((t * nv + h) * dv + j)] = o;
      }
    }
  return out;
}

}  // namespace ninfer::testing::ref
