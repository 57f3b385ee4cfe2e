// Owns the report's small SVG writer: grouped bar charts and x/y charts (points, optional lines, linear or log
// axes), with nice ticks, a legend and escaped text. No plotting dependency (docs/bench.md says why).
#pragma once

#include <string>
#include <vector>

namespace ninfer::bench {

struct ChartSeries {
  std::string name;
  std::vector<double> x;   // xy charts only
  std::vector<double> y;   // bar charts: one per category (NaN: no bar)
  std::vector<double> lo;  // optional whiskers (same length as y), e.g. min and max over repeats
  std::vector<double> hi;
};

struct ChartAxis {
  std::string label;
  bool log = false;
  bool integer = false;  // xy charts' x: ticks at whole numbers only (e.g. draft positions)
  double min = 0, max = 0;  // a fixed range when max > min
};

// One bar per series in each category, side by side; whiskers where lo/hi are given.
std::string svg_bar_chart(const std::string& title, const std::vector<std::string>& categories,
                          const std::vector<ChartSeries>& series, const ChartAxis& y);

// Points of each series; with `lines`, a line through the median y of each distinct x (repeats of one x are
// drawn as points, the line follows their median).
std::string svg_xy_chart(const std::string& title, const ChartAxis& x, const ChartAxis& y,
                         const std::vector<ChartSeries>& series, bool lines);

// Tick values for [lo, hi]: 1-2-5 steps (linear) or powers of ten (log); exposed for tests.
std::vector<double> nice_ticks(double lo, double hi, bool log);

}  // namespace ninfer::bench
