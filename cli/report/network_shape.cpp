#include "cli/report/network_shape.h"

namespace papaya::cli {

std::string network_shape(const model::NetworkConfig& c) {
  switch (c.family) {
    case model::Family::resnet: {
      std::string stages;
      for (int s : c.resnet().stages) stages += (stages.empty() ? "" : "-") + std::to_string(s);
      return c.resnet().block + " " + stages + ", " + std::to_string(c.resnet().image_size) + "px";
    }
    case model::Family::mlp: return std::to_string(c.mlp().hidden.size()) + " hidden layers";
    case model::Family::torchscript: {
      std::string inputs;
      for (const auto& spec : c.torchscript().inputs) inputs += (inputs.empty() ? "" : ", ") + spec;
      return "TorchScript " + c.torchscript().archive + " on " + inputs;
    }
    default: {
      const auto& t = c.transformer();
      const std::string kv = t.kv_heads < t.heads ? " (" + std::to_string(t.kv_heads) + " k/v)" : "";
      const std::string width = t.head_width > 0 ? " of " + std::to_string(t.head_width) : "";
      return std::to_string(t.layers) + "x" + std::to_string(t.d_model) + ", " + std::to_string(t.heads) + " heads" + width + kv +
             ", " + std::to_string(c.sequence_length()) + " tokens";
    }
  }
}

}  // namespace papaya::cli
