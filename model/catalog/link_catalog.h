#pragma once
// The links data-parallel ranks exchange over (configs/links/*.json):
// NVLink, PCIe, InfiniBand, Ethernet, with the source of each figure; and
// links measured on a host (papaya profile --comm --out), in the same form.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/parallel/link.h"

namespace papaya::model {

struct LinkSpec {
  std::string name, description;
  std::vector<std::string> aliases;
  LinkFit fit;
  std::map<std::string, std::string> sources;  // figure -> where it comes from
};

// Every catalog entry, sorted by name.
std::vector<LinkSpec> link_catalog();
std::string link_names();  // comma-separated, for messages

// A catalog name or alias (case-insensitive), or the path of a link file;
// InputError naming the catalog's links otherwise, or what is wrong in the file.
LinkSpec load_link(const std::string& name_or_path);

// A link file's form (configs/schemas/link.schema.json), without `measured`.
nlohmann::json link_to_json(const LinkSpec& link);

}  // namespace papaya::model
