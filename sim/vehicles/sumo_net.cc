#include "sim/vehicles/sumo_net.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <unordered_map>

#include "sim/vehicles/xml_stream.h"

namespace murmur::sim {

namespace {

constexpr std::size_t kMaxJunctions = std::size_t{1} << 24;

class JunctionHandler : public XmlStream::Handler {
 public:
  std::vector<Junction> junctions;
  bool root_seen = false;

  Status Start(std::string_view name, XmlStream::Attrs attrs) override {
    ++depth_;
    if (depth_ == 1) {
      if (name != "net")
        return Status::InvalidArgument("root element <" + std::string(name) + ">: a SUMO network has <net>");
      root_seen = true;
      return Status::Ok();
    }
    if (depth_ != 2 || name != "junction") return Status::Ok();
    Junction j;
    const char* id = XmlStream::Find(attrs, "id");
    if (id == nullptr) return Status::InvalidArgument("<junction> without attribute id");
    j.id = id;
    const char* type = XmlStream::Find(attrs, "type");
    j.type = type == nullptr ? "" : type;
    if (j.type == "internal") return Status::Ok();
    MURMUR_ASSIGN_OR_RETURN(j.x, XmlStream::Number(attrs, name, "x"));
    MURMUR_ASSIGN_OR_RETURN(j.y, XmlStream::Number(attrs, name, "y"));
    if (std::abs(j.x) > 1e9 || std::abs(j.y) > 1e9)
      return Status::InvalidArgument("junction " + j.id + " at a coordinate beyond 1e9 m");
    if (junctions.size() >= kMaxJunctions)
      return Status::InvalidArgument("more than " + std::to_string(kMaxJunctions) + " junctions");
    junctions.push_back(std::move(j));
    return Status::Ok();
  }
  Status End(std::string_view) override {
    --depth_;
    return Status::Ok();
  }

 private:
  int depth_ = 0;
};

}  // namespace

Result<std::vector<Junction>> ReadJunctions(const std::string& path) {
  JunctionHandler h;
  MURMUR_ASSIGN_OR_RETURN(auto xml, XmlStream::Open(path, &h));
  for (;;) {
    MURMUR_ASSIGN_OR_RETURN(bool more, xml->Feed());
    if (!more) break;
  }
  if (!h.root_seen) return Status::InvalidArgument(path + ": no <net> element (not a SUMO network)");
  if (h.junctions.empty()) return Status::InvalidArgument(path + ": a network without junctions");
  return std::move(h.junctions);
}

namespace {

// "file:PATH": the file's ids joined by commas, comments and blanks dropped.
Result<std::string> IdList(const std::string& ids) {
  if (ids.rfind("file:", 0) != 0) return ids;
  const std::string path = ids.substr(5);
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open");
  std::string joined, line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::string id;
    for (char c : line + ",") {
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
        if (!id.empty()) joined += (joined.empty() ? "" : ",") + id;
        id.clear();
      } else {
        id += c;
      }
    }
  }
  if (joined.empty()) return Status::InvalidArgument(path + ": no junction id");
  return joined;
}

}  // namespace

Result<std::vector<Junction>> PickJunctions(std::span<const Junction> all, const std::string& list) {
  MURMUR_ASSIGN_OR_RETURN(const std::string ids, IdList(list));
  std::unordered_map<std::string_view, const Junction*> by_id;
  for (const Junction& j : all) by_id.emplace(j.id, &j);
  std::vector<Junction> picked;
  std::size_t start = 0;
  while (start <= ids.size()) {
    std::size_t comma = ids.find(',', start);
    if (comma == std::string::npos) comma = ids.size();
    const std::string id = ids.substr(start, comma - start);
    auto it = by_id.find(id);
    if (it == by_id.end()) return Status::InvalidArgument("junction '" + id + "' is not in the network");
    picked.push_back(*it->second);
    start = comma + 1;
  }
  return picked;
}

}  // namespace murmur::sim
