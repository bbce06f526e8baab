#pragma once
// The hardware catalog (configs/hardware/*.json): datasheet figures of the
// accelerators papaya predicts for, with the source of each figure.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/kernel_model.h"

namespace papaya::model {

struct HardwareSpec {
  std::string name;
  std::string vendor;
  std::string description;
  std::vector<std::string> aliases;
  double memory_bytes = 0;                                  // device memory
  double memory_bandwidth = 0;                              // bytes/s
  std::map<std::string, std::optional<double>> peak_flops;  // dtype -> FLOP/s (dense); nullopt: no such path
  std::string host_link;                                    // "PCIe 5.0 x16"
  double h2d_bandwidth = 0;                                 // bytes/s, per direction
  double d2h_bandwidth = 0;
  std::string interconnect;                    // the link its GPUs exchange over in one node (link_catalog.h)
  std::map<std::string, std::string> sources;  // figure -> datasheet
  // Its kernels' time (kernel_model.h): the entry's measured figures
  // (`papaya calibrate`) where it has them, else the typical ones with its
  // SM count.
  KernelModel kernels;
  bool kernels_measured = false;

  // Peak FLOP/s for a training precision ("fp32" uses tf32 where it exists
  // only if `allow_tf32`); throws InputError if the chip has no such path.
  double peak_for(const std::string& precision, bool allow_tf32 = false) const;
  // Throws InputError where `precision` is an FP8 recipe and the chip has
  // no FP8 products. (Another precision's missing half type is priced in
  // the other one: target.h.)
  void check_runs(const std::string& precision) const;
};

// The catalog's compute path (a peak_flops key) of a training precision:
// autocast's ("amp-bf16") run on its half type's, where its matmuls, nearly
// all of its FLOPs, run; an FP8 recipe's on bf16's, beside the FP8 products
// of the linear layers it converts (peak_flops "fp8").
std::string compute_path(const std::string& precision);

// Whether `wanted` is `name` or one of `aliases`, case-insensitive: how
// every catalog (hardware, links) looks its entries up.
bool catalog_name_matches(const std::string& wanted, const std::string& name, const std::vector<std::string>& aliases);

// By name or alias, case-insensitive ("h100", "H100-SXM-80GB"); nullopt for
// a name the catalog lacks.
std::optional<HardwareSpec> find_hardware(const std::string& name);

// find_hardware, or an InputError listing the catalog. A name ending in
// ".json" is a file of an entry's form (one `papaya calibrate` wrote): its
// errors name the file.
HardwareSpec load_hardware(const std::string& name);

// An entry's JSON as its file holds it (load_hardware's names and files).
nlohmann::json hardware_entry_json(const std::string& name);

// The catalog's names, comma-separated, for messages.
std::string hardware_names();

// Every catalog entry, sorted by name.
std::vector<HardwareSpec> hardware_catalog();

}  // namespace papaya::model
