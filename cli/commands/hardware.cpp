// papaya hardware: the hardware catalog.
#include "model/catalog/hardware.h"

#include <algorithm>
#include "cli/commands/commands.h"
#include "cli/report/report.h"
#include "cli/report/table.h"
#include "model/catalog/link_catalog.h"
#include "model/units.h"

namespace papaya::cli {
namespace {

// Its peak on one compute path in TF/s, "-" where it has none (a catalog
// file of its own may leave fp8 out).
std::string tflops(const model::HardwareSpec& h, const std::string& path) {
  const auto it = h.peak_flops.find(path);
  return it != h.peak_flops.end() && it->second ? fixed(*it->second / 1e12, 1) : "-";
}

nlohmann::json spec_json(const model::HardwareSpec& h, const model::LinkSpec& interconnect) {
  nlohmann::json peak;
  for (const auto& [dtype, flops] : h.peak_flops) peak[dtype] = flops ? nlohmann::json(*flops) : nlohmann::json();
  return {{"name", h.name},
          {"vendor", h.vendor},
          {"description", h.description},
          {"aliases", h.aliases},
          {"memory_bytes", h.memory_bytes},
          {"memory_bandwidth_bytes_per_s", h.memory_bandwidth},
          {"peak_flops", peak},
          {"host_link", h.host_link},
          {"h2d_bytes_per_s", h.h2d_bandwidth},
          {"d2h_bytes_per_s", h.d2h_bandwidth},
          {"interconnect", h.interconnect},
          {"interconnect_bytes_per_s", interconnect.fit.bytes_per_s},
          {"interconnect_latency_s", interconnect.fit.latency_s},
          {"sm_count", h.kernels.sm_count},
          {"kernel_model",
           {{"matmul_efficiency", h.kernels.matmul_efficiency},
            {"attention_efficiency",
             {{"forward", h.kernels.attention_forward_efficiency}, {"backward", h.kernels.attention_backward_efficiency}}},
            {"memory_efficiency", h.kernels.memory_efficiency},
            {"kernel_latency_s", h.kernels.kernel_latency_s},
            {"measured", h.kernels_measured},
            {"source", h.kernels.source}}},
          {"sources", h.sources}};
}

struct Catalog {
  std::vector<model::HardwareSpec> entries;
  std::vector<model::LinkSpec> links;  // configs/links
  bool sources = false;                // print each figure's datasheet too

  const model::LinkSpec& link(const std::string& name) const {
    return *std::find_if(links.begin(), links.end(), [&](const auto& l) { return l.name == name; });
  }
};

void to_json(nlohmann::json& out, const Catalog& c) {
  out = nlohmann::json::array();
  for (const auto& h : c.entries) out.push_back(spec_json(h, c.link(h.interconnect)));
}

void print_text(std::ostream& out, const Catalog& c) {
  Table table({"hardware", "memory", "bandwidth GB/s", "fp32 TF/s", "tf32 TF/s", "bf16 TF/s", "fp16 TF/s", "fp8 TF/s", "SMs",
               "host link", "GB/s per direction", "interconnect"});
  for (const auto& h : c.entries) {
    table.add_row({h.name, model::format_bytes(h.memory_bytes), fixed(h.memory_bandwidth / 1e9, 0), tflops(h, "fp32"),
                   tflops(h, "tf32"), tflops(h, "bf16"), tflops(h, "fp16"), tflops(h, "fp8"), std::to_string(h.kernels.sm_count),
                   h.host_link, fixed(h.h2d_bandwidth / 1e9, 1), h.interconnect});
  }
  table.print(out);
  out << "TF/s: dense peak (no sparsity); bf16/fp16/fp8 on tensor (AMD: matrix) cores with fp32 accumulation, but\n"
         "P100 fp16: packed half2 on CUDA cores; '-': no such path. SMs (AMD: compute units): a matrix product runs\n"
         "in waves of one tile each (docs/gpu-time.md); a CPU profile is priced by the kernels its layers run there.\n"
         "interconnect: the link its GPUs exchange gradients over in one node (--gpus N prices it):\n\n";
  Table links({"link", "GB/s a GPU, per direction", "latency us", "between"});
  for (const auto& l : c.links) {
    links.add_row({l.name, fixed(l.fit.bytes_per_s / 1e9, 2), fixed(l.fit.latency_s * 1e6, 0), l.description});
  }
  links.print(out);
  if (!c.sources) return;
  for (const auto& h : c.entries) {
    out << "\n" << h.name << "\n";
    for (const auto& [figure, source] : h.sources) out << "  " << figure << ": " << source << "\n";
  }
  for (const auto& l : c.links) {
    out << "\n" << l.name << "\n";
    for (const auto& [figure, source] : l.sources) out << "  " << figure << ": " << source << "\n";
  }
}

}  // namespace

void register_hardware(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "hardware",
      "List the hardware catalog (configs/hardware) and the links between GPUs (configs/links): datasheet figures and sources.");
  const auto output = add_output_options(cmd);
  auto sources = std::make_shared<bool>(false);
  cmd->add_flag("--sources", *sources, "Also print the datasheet each figure comes from");
  cmd->callback([output, sources] { show(Catalog{model::hardware_catalog(), model::link_catalog(), *sources}, *output); });
}

}  // namespace papaya::cli
