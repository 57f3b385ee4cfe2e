#include "bench/serving/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace ninfer::bench {

namespace {

constexpr double kWidth = 860, kHeight = 460;
constexpr double kLeft = 80, kRight = 190, kTop = 44, kBottom = 64;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
// Colour-blind-safe palette (Okabe–Ito).
const char* const kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"};

const char* color(size_t i) { return kColors[i % (sizeof(kColors) / sizeof(kColors[0]))]; }

std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

// Maps data values to pixels along one axis.
struct Scale {
  double lo, hi, px0, px1;
  bool log;
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return px0 + t * (px1 - px0);
  }
};

std::string header(const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, kLeft, esc(title));
}

std::string y_axis(const Scale& s, const ChartAxis& axis) {
  std::string out;
  for (double t : nice_ticks(s.lo, s.hi, axis.log)) {
    const double py = s(t);
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       kLeft, kLeft + kPlotW, py, kLeft - 6, py + 4, tick_label(t));
  }
  out += fmt::format("<text transform=\"translate(20 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     kTop + kPlotH / 2, esc(axis.label));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                     kTop, kPlotW, kPlotH);
  return out;
}

std::string legend(const std::vector<ChartSeries>& series) {
  std::string out;
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = kTop + 10 + 20 * static_cast<double>(i);
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
                       "<text x=\"{}\" y=\"{}\">{}</text>\n",
                       kLeft + kPlotW + 14, y - 10, color(i), kLeft + kPlotW + 32, y, esc(series[i].name));
  }
  return out;
}

// [lo, hi] of the values, padded; a log axis needs positive values.
std::pair<double, double> range_of(const std::vector<double>& v, bool log, bool from_zero) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double x : v)
    if (std::isfinite(x) && (!log || x > 0)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (!std::isfinite(lo)) return {log ? 1 : 0, log ? 10 : 1};
  if (log) return {std::pow(10, std::floor(std::log10(lo))), std::pow(10, std::ceil(std::log10(hi) + 1e-9))};
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi == lo) hi = lo + 1;
  const std::vector<double> t = nice_ticks(lo, hi + (hi - lo) * 0.05, false);
  return {std::min(lo, t.front()), std::max(hi, t.back())};
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, bool log) {
  std::vector<double> ticks;
  if (log) {
    for (double d = std::floor(std::log10(lo)); d <= std::ceil(std::log10(hi)) + 1e-9; d += 1) ticks.push_back(std::pow(10, d));
    return ticks;
  }
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  for (double t = std::floor(lo / step) * step; t <= hi + step * 0.999; t += step) ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& categories,
                          const std::vector<ChartSeries>& series, const ChartAxis& y) {
  std::vector<double> all;
  for (const ChartSeries& s : series) {
    all.insert(all.end(), s.y.begin(), s.y.end());
    all.insert(all.end(), s.hi.begin(), s.hi.end());
  }
  const auto [lo, hi] = range_of(all, false, true);
  const Scale sy{lo, hi, kTop + kPlotH, kTop, false};
  std::string out = header(title) + y_axis(sy, y);
  const double group = kPlotW / static_cast<double>(std::max<size_t>(categories.size(), 1));
  const double bar = group * 0.8 / static_cast<double>(std::max<size_t>(series.size(), 1));
  for (size_t c = 0; c < categories.size(); ++c) {
    const double gx = kLeft + group * static_cast<double>(c);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", gx + group / 2,
                       kTop + kPlotH + 18, esc(categories[c]));
    for (size_t i = 0; i < series.size(); ++i) {
      const ChartSeries& s = series[i];
      if (c >= s.y.size() || !std::isfinite(s.y[c])) continue;
      const double x = gx + group * 0.1 + bar * static_cast<double>(i);
      const double top = sy(s.y[c]), base = sy(std::max(lo, 0.0));
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\">"
                         "<title>{}: {:.2f}</title></rect>\n",
                         x, top, bar * 0.92, base - top, color(i), esc(s.name), s.y[c]);
      if (c < s.lo.size() && c < s.hi.size() && std::isfinite(s.lo[c]) && std::isfinite(s.hi[c])) {
        const double cx = x + bar * 0.46;
        out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#222\"/>"
                           "<line x1=\"{3:.1f}\" x2=\"{4:.1f}\" y1=\"{1:.1f}\" y2=\"{1:.1f}\" stroke=\"#222\"/>"
                           "<line x1=\"{3:.1f}\" x2=\"{4:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#222\"/>\n",
                           cx, sy(s.lo[c]), sy(s.hi[c]), cx - 3, cx + 3);
      }
    }
  }
  return out + legend(series) + "</svg>\n";
}

std::string svg_xy_chart(const std::string& title, const ChartAxis& x, const ChartAxis& y,
                         const std::vector<ChartSeries>& series, bool lines) {
  std::vector<double> xs, ys;
  for (const ChartSeries& s : series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  auto [xlo, xhi] = range_of(xs, x.log, false);
  auto [ylo, yhi] = range_of(ys, y.log, true);
  if (x.integer && !xs.empty()) {
    xlo = std::floor(*std::min_element(xs.begin(), xs.end())) - 0.5;
    xhi = std::ceil(*std::max_element(xs.begin(), xs.end())) + 0.5;
  }
  if (x.max > x.min) xlo = x.min, xhi = x.max;
  if (y.max > y.min) ylo = y.min, yhi = y.max;
  const Scale sx{xlo, xhi, kLeft, kLeft + kPlotW, x.log}, sy{ylo, yhi, kTop + kPlotH, kTop, y.log};
  std::string out = header(title) + y_axis(sy, y);
  std::vector<double> xticks = nice_ticks(xlo, xhi, x.log);
  if (x.integer) {
    xticks.clear();
    for (double t = std::ceil(xlo); t <= xhi; t += 1) xticks.push_back(t);
  }
  for (double t : xticks) {
    if (t < xlo || t > xhi) continue;
    out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#eee\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       sx(t), kTop, kTop + kPlotH, kTop + kPlotH + 18, tick_label(t));
  }
  out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + kPlotW / 2,
                     kHeight - 18, esc(x.label));
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    std::vector<std::pair<double, double>> p;
    for (size_t k = 0; k < std::min(s.x.size(), s.y.size()); ++k)
      if (std::isfinite(s.x[k]) && std::isfinite(s.y[k]) && (!x.log || s.x[k] > 0) && (!y.log || s.y[k] > 0))
        p.emplace_back(s.x[k], s.y[k]);
    std::sort(p.begin(), p.end());
    std::vector<std::pair<double, double>> medians;  // (x, median y) per distinct x
    for (size_t a = 0; a < p.size();) {
      size_t b = a;
      while (b < p.size() && p[b].first == p[a].first) ++b;
      const size_t n = b - a;
      medians.emplace_back(p[a].first, n % 2 ? p[a + n / 2].second : (p[a + n / 2 - 1].second + p[a + n / 2].second) / 2);
      a = b;
    }
    if (lines && medians.size() > 1) {
      std::string pts;
      for (const auto& [px, py] : medians) pts += fmt::format("{:.1f},{:.1f} ", sx(px), sy(py));
      out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", pts, color(i));
    }
    for (const auto& [px, py] : p)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.8\">"
                         "<title>{}: ({:g}, {:.3g})</title></circle>\n",
                         sx(px), sy(py), color(i), esc(s.name), px, py);
  }
  return out + legend(series) + "</svg>\n";
}

}  // namespace ninfer::bench
