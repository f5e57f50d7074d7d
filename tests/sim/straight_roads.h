// Vehicles on straight roads as a SUMO FCD trace, and a small network:
// motion whose contacts have closed forms, for the vehicles' tests.
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace murmur::sim {

// A vehicle on a straight road: position p0 + v t, seen from `from` to `to` (seconds, inclusive).
struct Straight {
  std::string id;
  double x0, y0, vx, vy;
  int from, to;
};

// The FCD trace of `cars` at 1 s steps over [0, last], with speed and angle
// (SUMO's degrees clockwise from north) when `instruments`.
inline std::string Trace(const std::vector<Straight>& cars, int last, bool instruments = true,
                         int first = 0) {
  std::ostringstream o;
  o.precision(17);
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<fcd-export>\n";
  for (int t = first; t <= last; ++t) {
    o << "  <timestep time=\"" << t << ".00\">\n";
    for (const Straight& c : cars) {
      if (t < c.from || t > c.to) continue;
      o << "    <vehicle id=\"" << c.id << "\" x=\"" << c.x0 + c.vx * t << "\" y=\"" << c.y0 + c.vy * t
        << "\"";
      if (instruments) {
        const double speed = std::hypot(c.vx, c.vy);
        const double angle = std::atan2(c.vx, c.vy) * 180 / 3.14159265358979323846;
        o << " angle=\"" << angle << "\" speed=\"" << speed << "\"";
      }
      o << " type=\"DEFAULT_VEHTYPE\" lane=\"e_0\"/>\n";
    }
    o << "  </timestep>\n";
  }
  o << "</fcd-export>\n";
  return o.str();
}

inline const std::string kNet =
    "<net version=\"1.9\">\n"
    "  <location netOffset=\"0.00,0.00\"/>\n"
    "  <edge id=\":J1_0\" function=\"internal\"/>\n"
    "  <junction id=\"J0\" type=\"dead_end\" x=\"0.00\" y=\"0.00\"/>\n"
    "  <junction id=\":J1_0_0\" type=\"internal\" x=\"301.00\" y=\"0.00\"/>\n"
    "  <junction id=\"J1\" type=\"traffic_light\" x=\"300.00\" y=\"0.00\"/>\n"
    "  <junction id=\"J2\" type=\"priority\" x=\"5000.00\" y=\"5000.00\"/>\n"
    "</net>\n";

}  // namespace murmur::sim
