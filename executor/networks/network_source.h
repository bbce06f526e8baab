#pragma once
// Where the executor's networks come from: a network's description, parsed
// once by the command that names it, and the builder that makes a Network of
// it. A Session (session.h) builds through this interface only.
//
// Every description is a model::NetworkConfig: papaya's own (configs/networks,
// or a file) and a HuggingFace config.json imported into one
// (model/catalog/hf_config.h) the zoo builds; a TorchScript archive's
// (family torchscript) is loaded by executor/torchscript/imported_network.h.
#include <memory>

#include "executor/networks/network.h"
#include "model/catalog/network_config.h"

namespace papaya::executor {

class NetworkSource {
 public:
  virtual ~NetworkSource() = default;
  // What profiles, models, plans and training states record of the network,
  // and what its synthetic data is shaped by.
  virtual const model::NetworkConfig& config() const = 0;
  // A fresh network, its layers and segments named, on the CPU in fp32
  // (the caller seeds, moves and casts it).
  virtual std::shared_ptr<Network> build() const = 0;
};

// A config of the zoo, built by its family's builder (zoo.h).
class ZooSource : public NetworkSource {
 public:
  explicit ZooSource(model::NetworkConfig config) : config_(std::move(config)) {}
  const model::NetworkConfig& config() const override { return config_; }
  std::shared_ptr<Network> build() const override;

 private:
  model::NetworkConfig config_;
};

}  // namespace papaya::executor
