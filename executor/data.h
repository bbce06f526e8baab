#pragma once
// Training data: synthetic batches with a learnable target for every family
// of the zoo (a TorchScript network's inputs drawn from their specs), or a
// file: a text read as a character-level language-modelling corpus (gpt), a
// TorchScript network's recorded batches.
#include <memory>
#include <string>

#include "executor/networks/network.h"

namespace papaya::executor {

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual Batch next(int64_t batch_size) = 0;
  virtual std::string describe() const = 0;
  // Where the source is in its stream: its generator's state, to resume from.
  virtual torch::Tensor position() const = 0;
  virtual void seek(const torch::Tensor& position) = 0;
};

// gpt: sequences that follow a fixed random permutation of the vocabulary 90%
// of the time; bert: the class is the second token's id modulo the classes;
// vit, resnet, mlp: a fixed random template per class (for images a colour
// and a fainter pattern) plus unit noise.
std::unique_ptr<DataSource> make_synthetic_data(const model::NetworkConfig& config, torch::Device device, uint64_t seed);

// Training data read from a file: for a gpt, random windows of a text file's
// characters (each distinct byte one token); for a TorchScript network, the
// batches torch.save wrote (torchscript/recorded_batches.h), their rows read in
// order and cycled. Throws InputError if the file is unreadable or does not fit
// the network (a text shorter than a window or with more distinct characters
// than the vocabulary; batches unlike the forward's inputs), or the network is
// of another family.
std::unique_ptr<DataSource> make_file_data(const std::string& path, const model::NetworkConfig& config, torch::Device device,
                                           uint64_t seed);

}  // namespace papaya::executor
