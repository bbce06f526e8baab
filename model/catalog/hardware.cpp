#include "model/catalog/hardware.h"

#include <algorithm>
#include <cctype>

#include "model/error.h"
#include "model/fp8_recipe.h"
#include "model/json_file.h"

namespace papaya::model {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

HardwareSpec parse(const nlohmann::json& doc, const std::string& label) {
  validate_json(doc, "hardware", label);
  HardwareSpec h;
  h.name = doc.at("name");
  h.vendor = doc.at("vendor");
  h.description = doc.value("description", "");
  h.aliases = doc.value("aliases", std::vector<std::string>{});
  h.memory_bytes = doc.at("memory_gib").get<double>() * 1024.0 * 1024.0 * 1024.0;
  h.memory_bandwidth = doc.at("memory_bandwidth_gbs").get<double>() * 1e9;
  for (const auto& [dtype, value] : doc.at("peak_tflops").items()) {
    h.peak_flops[dtype] = value.is_null() ? std::nullopt : std::optional<double>(value.get<double>() * 1e12);
  }
  const auto& link = doc.at("host_link");
  h.host_link = link.at("name");
  h.h2d_bandwidth = link.at("h2d_gbs").get<double>() * 1e9;
  h.d2h_bandwidth = link.at("d2h_gbs").get<double>() * 1e9;
  h.interconnect = doc.at("interconnect");
  h.sources = doc.at("sources").get<std::map<std::string, std::string>>();
  h.kernels = typical_kernel_model(doc.value("sm_count", 0));
  if (doc.contains("kernel_model")) {
    const auto& k = doc.at("kernel_model");
    for (const auto& [path, value] : k.at("matmul_efficiency").items()) h.kernels.matmul_efficiency[path] = value;
    h.kernels.attention_forward_efficiency = k.at("attention_efficiency").at("forward");
    h.kernels.attention_backward_efficiency = k.at("attention_efficiency").at("backward");
    h.kernels.memory_efficiency = k.at("memory_efficiency");
    h.kernels.kernel_latency_s = k.at("kernel_latency_us").get<double>() * 1e-6;
    h.kernels.source = k.at("source");
    h.kernels_measured = true;
  }
  return h;
}

}  // namespace

std::string compute_path(const std::string& precision) {
  const std::string amp = "amp-";
  if (is_fp8_precision(precision)) return "bf16";  // the FP8 recipes' products alone are FP8 (layer_kernels.h)
  return precision.rfind(amp, 0) == 0 ? precision.substr(amp.size()) : precision;
}

double HardwareSpec::peak_for(const std::string& precision, bool allow_tf32) const {
  std::string key = compute_path(precision);
  if (precision == "fp32" && allow_tf32 && peak_flops.at("tf32")) key = "tf32";
  const auto it = peak_flops.find(key);
  if (it == peak_flops.end() || !it->second) {
    throw InputError("hardware " + name + " has no " + precision + " compute path");
  }
  return *it->second;
}

void HardwareSpec::check_runs(const std::string& precision) const {
  const auto fp8 = peak_flops.find("fp8");
  if (is_fp8_precision(precision) && (fp8 == peak_flops.end() || !fp8->second)) {
    throw InputError("hardware " + name + " has no FP8 products (peak_tflops.fp8): precision " + precision + " needs them");
  }
}

std::vector<HardwareSpec> hardware_catalog() {
  std::vector<HardwareSpec> all;
  for (const auto& [path, doc] : read_catalog_folder("hardware", "hardware entry")) all.push_back(parse(doc, path));
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return all;
}

bool catalog_name_matches(const std::string& wanted, const std::string& name, const std::vector<std::string>& aliases) {
  const std::string w = lower(wanted);
  return lower(name) == w || std::any_of(aliases.begin(), aliases.end(), [&](const auto& a) { return lower(a) == w; });
}

std::optional<HardwareSpec> find_hardware(const std::string& name) {
  for (auto& h : hardware_catalog()) {
    if (catalog_name_matches(name, h.name, h.aliases)) return h;
  }
  return std::nullopt;
}

namespace {

bool names_a_file(const std::string& name) {
  const std::string json = ".json";
  return name.size() > json.size() && name.compare(name.size() - json.size(), json.size(), json) == 0;
}

[[noreturn]] void unknown(const std::string& name) {
  throw InputError("unknown hardware '" + name + "' (known: " + hardware_names() + ", or an entry's FILE.json)");
}

}  // namespace

HardwareSpec load_hardware(const std::string& name) {
  if (names_a_file(name)) return parse(read_json_file(name, "hardware file"), name);
  if (auto h = find_hardware(name)) return *h;
  unknown(name);
}

nlohmann::json hardware_entry_json(const std::string& name) {
  if (names_a_file(name)) return read_json_file(name, "hardware file");
  for (auto& [path, doc] : read_catalog_folder("hardware", "hardware entry")) {
    if (catalog_name_matches(name, doc.at("name"), doc.value("aliases", std::vector<std::string>{}))) return doc;
  }
  unknown(name);
}

std::string hardware_names() {
  std::string names;
  for (const auto& h : hardware_catalog()) names += (names.empty() ? "" : ", ") + h.name;
  return names;
}

}  // namespace papaya::model
