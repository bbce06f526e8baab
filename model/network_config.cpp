#include "model/network_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "model/error.h"
#include "model/hf_config.h"
#include "model/json_file.h"

namespace papaya::model {
namespace fs = std::filesystem;
using nlohmann::json;

int TransformerConfig::mlp_hidden() const { return static_cast<int>(std::lround(mlp_ratio * d_model)); }

int NetworkConfig::sequence_length() const {
  if (family == Family::vit) {
    const auto& t = transformer();
    const int side = t.image_size / t.patch;
    return side * side + 1;
  }
  if (family == Family::gpt || family == Family::bert) return transformer().seq_len;
  return 1;
}

std::string to_string(Family family) {
  switch (family) {
    case Family::gpt: return "gpt";
    case Family::bert: return "bert";
    case Family::vit: return "vit";
    case Family::resnet: return "resnet";
    case Family::mlp: return "mlp";
  }
  return "?";
}

namespace {

Family family_of(const json& doc, const std::string& label) {
  if (!doc.is_object()) throw InputError(label + ": /: expected an object");
  const auto it = doc.find("family");
  if (it == doc.end() || !it->is_string()) {
    throw InputError(label + ": /family: expected one of gpt, bert, vit, resnet, mlp");
  }
  for (Family f : {Family::gpt, Family::bert, Family::vit, Family::resnet, Family::mlp}) {
    if (*it == to_string(f)) return f;
  }
  throw InputError(label + ": /family: '" + it->get<std::string>() + "' is not one of gpt, bert, vit, resnet, mlp");
}

// Checks the schema cannot express: relations between fields.
void require(bool ok, const std::string& label, const std::string& pointer, const std::string& message) {
  if (!ok) throw InputError(label + ": " + pointer + ": " + message);
}

// The schemas bound integers from below only: one past an int would wrap
// (heads 2^32 read as 0, then divided by). Configs hold them at the top
// level and in arrays of integers (stages, hidden).
void require_ints_fit(const json& doc, const std::string& label) {
  const auto fits = [](const json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max());
    if (!v.is_number_integer()) return true;
    const int64_t i = v.get<int64_t>();
    return i >= std::numeric_limits<int>::min() && i <= std::numeric_limits<int>::max();
  };
  for (const auto& [key, value] : doc.items()) {
    const std::string pointer = "/" + key;
    require(fits(value), label, pointer, value.dump() + " is out of range");
    if (!value.is_array()) continue;
    for (size_t i = 0; i < value.size(); ++i) {
      require(fits(value[i]), label, pointer + "/" + std::to_string(i), value[i].dump() + " is out of range");
    }
  }
}

// The transformer schema is shared by gpt, bert and vit: keys that belong to
// another family are rejected here.
void reject_foreign_keys(const json& doc, Family family, const std::string& label) {
  const std::vector<std::string> text_keys = {"seq_len", "vocab"};
  const std::vector<std::string> image_keys = {"image_size", "patch", "channels"};
  const auto& foreign = family == Family::vit ? text_keys : image_keys;
  for (const auto& key : foreign) {
    require(!doc.contains(key), label, "/" + key, "not an option of a " + to_string(family) + " network");
  }
  if (family == Family::gpt) require(!doc.contains("classes"), label, "/classes", "not an option of a gpt network");
}

TransformerConfig parse_transformer(const json& doc, Family family, const std::string& label) {
  TransformerConfig t;
  t.layers = doc.at("layers");
  t.d_model = doc.at("d_model");
  t.heads = doc.at("heads");
  t.mlp_ratio = doc.value("mlp_ratio", t.mlp_ratio);
  t.activation = doc.value("activation", t.activation);
  t.norm = doc.value("norm", t.norm);
  t.dropout = doc.value("dropout", t.dropout);
  require(t.d_model % t.heads == 0, label, "/heads",
          std::to_string(t.heads) + " heads do not divide d_model " + std::to_string(t.d_model));
  require(t.mlp_hidden() >= 1, label, "/mlp_ratio", "gives an MLP of no units");
  if (family == Family::vit) {
    t.image_size = doc.at("image_size");
    t.patch = doc.at("patch");
    t.channels = doc.value("channels", t.channels);
    t.classes = doc.at("classes");
    require(t.image_size % t.patch == 0, label, "/patch",
            "patch " + std::to_string(t.patch) + " does not divide image_size " + std::to_string(t.image_size));
    // sequence_length(): the patches and the class token, an int.
    const int64_t side = t.image_size / t.patch;
    require(side * side < std::numeric_limits<int>::max(), label, "/patch",
            std::to_string(side * side) + " patches are too many");
  } else {
    t.seq_len = doc.at("seq_len");
    t.vocab = doc.at("vocab");
    if (family == Family::bert) t.classes = doc.at("classes");
  }
  return t;
}

ResNetConfig parse_resnet(const json& doc, const std::string& label) {
  ResNetConfig r;
  r.block = doc.at("block");
  r.stages = doc.at("stages").get<std::vector<int>>();
  r.width = doc.value("width", r.width);
  r.image_size = doc.at("image_size");
  r.channels = doc.value("channels", r.channels);
  r.classes = doc.at("classes");
  // The stem halves the image twice, each further stage once more.
  const int reduction = 4 << (r.stages.size() - 1);
  require(r.image_size >= reduction, label, "/image_size",
          "must be at least " + std::to_string(reduction) + " for " + std::to_string(r.stages.size()) + " stages");
  return r;
}

MlpConfig parse_mlp(const json& doc) {
  MlpConfig m;
  m.input = doc.at("input");
  m.hidden = doc.at("hidden").get<std::vector<int>>();
  m.classes = doc.at("classes");
  m.activation = doc.value("activation", m.activation);
  m.dropout = doc.value("dropout", m.dropout);
  return m;
}

}  // namespace

NetworkConfig parse_network_config(const json& doc, const std::string& label) {
  if (is_hf_config(doc)) return parse_network_config(network_config_from_hf(doc, fs::path(label).stem().string(), label), label);
  NetworkConfig config;
  config.document = doc;
  config.family = family_of(doc, label);
  require_ints_fit(doc, label);
  switch (config.family) {
    case Family::gpt:
    case Family::bert:
    case Family::vit:
      validate_json(doc, "network-transformer", label);
      reject_foreign_keys(doc, config.family, label);
      config.body = parse_transformer(doc, config.family, label);
      break;
    case Family::resnet:
      validate_json(doc, "network-resnet", label);
      config.body = parse_resnet(doc, label);
      break;
    case Family::mlp:
      validate_json(doc, "network-mlp", label);
      config.body = parse_mlp(doc);
      break;
  }
  config.name = doc.at("name");
  config.description = doc.value("description", "");
  return config;
}

NetworkConfig load_network_config(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".json";
  const std::string path = is_path ? name_or_path : (fs::path(config_dir()) / "networks" / (name_or_path + ".json")).string();
  if (!fs::exists(path)) {
    if (is_path) throw InputError(path + ": no such network config file");
    std::string known;
    for (const auto& n : shipped_network_names()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown network '" + name_or_path + "' (known: " + known + "; or give a path to a .json config)");
  }
  NetworkConfig config = parse_network_config(read_json_file(path, "network config"), path);
  config.source = path;
  return config;
}

std::vector<std::string> shipped_network_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(fs::path(config_dir()) / "networks")) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace papaya::model
