#include "model/catalog/link_catalog.h"

#include <algorithm>
#include <filesystem>

#include "model/catalog/hardware.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace fs = std::filesystem;

namespace {

LinkSpec parse(const nlohmann::json& doc, const std::string& label) {
  validate_json(doc, "link", label);
  LinkSpec l;
  l.name = doc.at("name");
  l.description = doc.value("description", "");
  l.aliases = doc.value("aliases", std::vector<std::string>{});
  l.fit.bytes_per_s = doc.at("bandwidth_gbs").get<double>() * 1e9;
  l.fit.latency_s = doc.at("latency_us").get<double>() * 1e-6;
  if (doc.contains("measured") && doc["measured"].contains("r2") && doc["measured"]["r2"].is_number()) {
    l.fit.r2 = doc["measured"]["r2"].get<double>();
  }
  l.sources = doc.at("sources").get<std::map<std::string, std::string>>();
  return l;
}

}  // namespace

std::vector<LinkSpec> link_catalog() {
  std::vector<LinkSpec> all;
  for (const auto& [path, doc] : read_catalog_folder("links", "link entry")) all.push_back(parse(doc, path));
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return all;
}

std::string link_names() {
  std::string names;
  for (const auto& l : link_catalog()) names += (names.empty() ? "" : ", ") + l.name;
  return names;
}

LinkSpec load_link(const std::string& name_or_path) {
  for (auto& l : link_catalog()) {
    if (catalog_name_matches(name_or_path, l.name, l.aliases)) return l;
  }
  if (fs::is_regular_file(name_or_path)) return parse(read_json_file(name_or_path, "link file"), name_or_path);
  throw InputError("unknown link '" + name_or_path + "': neither a link file nor one of " + link_names());
}

nlohmann::json link_to_json(const LinkSpec& link) {
  return {{"name", link.name},
          {"description", link.description},
          {"aliases", link.aliases},
          {"bandwidth_gbs", link.fit.bytes_per_s / 1e9},
          {"latency_us", link.fit.latency_s * 1e6},
          {"sources", link.sources}};
}

}  // namespace papaya::model
