#pragma once
// What `papaya calibrate` measured on a GPU, and the kernel model's figures
// (kernel_model.h) that explain it: each figure is the median over the
// kernels it governs of the value that makes the model's time the measured
// one, so that one odd shape does not move it.
//   kernel latency     tiny kernels (one element);
//   memory efficiency  passes of 64 MB or more, less the latency;
//   product ceiling    per compute path, products whose FLOPs outweigh their
//                      bytes, over the model's waves at a ceiling of 1;
//   attention          per direction, the same over fused attention's tiles.
// A figure with no kernel to measure it keeps the typical one, and the
// calibration says so.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/catalog/hardware.h"
#include "model/catalog/kernel_model.h"

namespace papaya::model {

enum class KernelClass { tiny, memory_pass, matmul, attention_forward, attention_backward };

const char* to_string(KernelClass kind);

struct KernelMeasurement {
  KernelClass kind = KernelClass::tiny;
  std::string path;                                  // a product's or attention's compute path ("bf16")
  double m = 0, n = 0, k = 0;                        // a product's shape
  double batch_heads = 0, tokens = 0, head_dim = 0;  // attention's (causal)
  double bytes = 0;                                  // a memory pass's, read and written
  double seconds = 0;                                // one kernel, the median of its repetitions
};

// A fused attention's FLOPs, causal: about half of the (query, key) pairs,
// two products of head_dim multiply-adds each (forward; backward 2.5 times).
double causal_attention_flops(double batch_heads, double tokens, double head_dim);

struct Calibration {
  KernelModel kernels;
  std::vector<std::string> typical;  // the figures no measurement reached
};

// Throws InputError where there is nothing to fit (no measurement at all).
Calibration fit_kernel_model(const HardwareSpec& hardware, const std::vector<KernelMeasurement>& measurements,
                             const std::string& source);

// `base` as a catalog entry's JSON (configs/hardware/*.json) under `name`,
// with the calibration's kernel model and its measurements: the file
// `--hardware FILE.json` reads.
nlohmann::json calibrated_entry(const nlohmann::json& base, const std::string& name, const Calibration& calibration,
                                const std::vector<KernelMeasurement>& measurements);

}  // namespace papaya::model
