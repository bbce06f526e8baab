#pragma once
// The user's network given back: the archive papaya trained, as
// torch.jit.load loads it, with the parameters and buffers the training left.
#include <torch/script.h>

#include <string>

namespace papaya::executor::torchscript {

// Writes to `path`, atomically, the archive at `source` (its code and its
// papaya.json as they were) with the values of `trained`'s parameters and
// buffers of the same names: `trained` is that archive loaded and trained
// by papaya (ImportedNetwork::module()), whose code carries papaya's layer
// markers, which no other program could run. Each value is written on the
// CPU in the archive's own dtype. InputError naming `path` where it cannot
// be written, or naming a tensor `trained` lacks or holds in another shape.
void save_trained_archive(const std::string& source, const torch::jit::Module& trained, const std::string& path);

}  // namespace papaya::executor::torchscript
